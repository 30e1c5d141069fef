// The handler-test harness (tests/helpers/app.ts) checks every JSON answer against the API
// document's schema for it (tests/helpers/response-schemas.ts); these cases prove that check bites.
import { expect, test } from "bun:test";
import { checkResponseSchema } from "../helpers/response-schemas.ts";

test("a success answer its route's response schema refuses fails the test that received it", () => {
  expect(() => checkResponseSchema("GET", "/v1/users/me", 200, "application/json", { user: { id: 7 } })).toThrow(/GET \/v1\/users\/me answered 200/);
});

test("a runner-protocol answer is checked against the wire schema the runner itself parses", () => {
  expect(() => checkResponseSchema("POST", "/v1/runners/r1/heartbeat", 200, "application/json", { renewed: [], cancel: "j1", lease_seconds: 60 })).toThrow();
});

test("an error answer must be {code, message}", () => {
  expect(() => checkResponseSchema("GET", "/v1/builds/b1", 404, "application/json", { error: "not found" })).toThrow();
  expect(() => checkResponseSchema("GET", "/v1/builds/b1", 404, "application/json", { code: "not_found", message: "No build with that id." })).not.toThrow();
});

test("streams, text and other media types are not JSON answers and are left alone", () => {
  expect(() => checkResponseSchema("GET", "/v1/builds/b1/logs", 200, "text/plain; charset=utf-8", undefined)).not.toThrow();
});
