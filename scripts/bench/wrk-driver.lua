-- wrk script for `npm run bench` (scripts/bench/wrk.ts writes its inputs).
-- Requests come pre-built from a file, because signing a distinct webhook body per request in
-- Lua would cost more than the server under test. The file holds raw HTTP requests, each as
-- "<byte length>\n<bytes>".
--   ROOST_WRK_REQUESTS  the file
--   ROOST_WRK_THREADS   T (the -t given to wrk)
--   ROOST_WRK_MODE      "static": one request, built once per thread by wrk itself (a Lua
--                       request() per request costs wrk about a fifth of its rate);
--                       "cycle": every thread goes round all the requests;
--                       "once": thread i of T sends records i, i+T, i+2T, ... each at most once,
--                       and a thread that runs out stops, so a run is bounded by count as well as
--                       by time (distinct webhook deliveries must not repeat, or the dedupe path
--                       would be measured instead)
-- done() prints one line "WRK_JSON {...}" with counts and latency percentiles (microseconds).

local ffi = require("ffi")
ffi.cdef[[
  typedef struct { long tv_sec; long tv_nsec; } roost_timespec;
  int clock_gettime(int clock, roost_timespec *ts);
]]
local function now_us()
  local ts = ffi.new("roost_timespec")
  ffi.C.clock_gettime(1, ts) -- CLOCK_MONOTONIC
  return tonumber(ts.tv_sec) * 1000000 + tonumber(ts.tv_nsec) / 1000
end

local mode = os.getenv("ROOST_WRK_MODE")
local once = mode == "once"
local threads = {}
local next_id = 0

function setup(thread)
  thread:set("id", next_id)
  next_id = next_id + 1
  table.insert(threads, thread)
end

local records = {}
local count = 0
local position = 0
local started = 0
exhausted = 0
-- Microseconds from this thread's start until it ran out of requests, so the rate of a
-- count-bounded run is taken over the time it really sent (wrk's own duration is the full -d).
exhausted_after_us = 0

function init(args)
  local total_threads = tonumber(os.getenv("ROOST_WRK_THREADS"))
  local file = assert(io.open(os.getenv("ROOST_WRK_REQUESTS"), "rb"))
  local index = 0
  while true do
    local header = file:read("*l")
    if not header then break end
    local bytes = file:read(tonumber(header))
    if not once or index % total_threads == id then
      count = count + 1
      records[count] = bytes
    end
    index = index + 1
  end
  file:close()
  assert(count > 0, "no requests for thread " .. id)
  started = now_us()
end

local function next_request()
  position = position + 1
  if position > count then
    if once then
      -- Out of distinct requests: stop this thread. wrk still wants bytes from this call; they
      -- go nowhere once the thread's event loop has stopped.
      if exhausted == 0 then exhausted_after_us = now_us() - started end
      exhausted = 1
      wrk.thread:stop()
      return records[count]
    end
    position = 1
  end
  return records[position]
end

-- wrk calls a global request() for every request; without one it sends the bytes wrk.format()
-- returns once, after init(), for the whole run.
if mode == "static" then
  wrk.format = function() return records[1] end
else
  request = next_request
end

function done(summary, latency, requests)
  local exhausted_threads = 0
  local last_exhausted_us = 0
  for _, thread in ipairs(threads) do
    if thread:get("exhausted") == 1 then
      exhausted_threads = exhausted_threads + 1
      last_exhausted_us = math.max(last_exhausted_us, thread:get("exhausted_after_us"))
    end
  end
  local e = summary.errors
  io.write(string.format(
    'WRK_JSON {"requests":%d,"duration_us":%d,"bytes":%d,"errors_connect":%d,"errors_read":%d,"errors_write":%d,"errors_status":%d,"errors_timeout":%d,'
      .. '"p50_us":%d,"p90_us":%d,"p99_us":%d,"max_us":%d,"mean_us":%.1f,"exhausted_threads":%d,"last_exhausted_us":%d}\n',
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max, latency.mean,
    exhausted_threads, last_exhausted_us))
end
