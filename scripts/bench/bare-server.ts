// The baseline: a bare Bun.serve answering a fixed JSON body (the same bytes Roost answered),
// so a ratio shows what routing, authentication, validation and the database cost.
const body = await Bun.file(process.argv[2]!).text();
const server = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  fetch: () => new Response(body, { headers: { "content-type": "application/json; charset=utf-8" } }),
});
console.log(JSON.stringify({ url: `http://127.0.0.1:${server.port}` }));

export {};
