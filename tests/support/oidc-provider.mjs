// A real OpenID Provider for the end-to-end test: the npm package `oidc-provider`, run under node
// (it prints "Unsupported runtime" on Node 20 but works). PKCE required (S256 only), the claims
// parameter enabled so the ID token can carry the e-mail, and the package's development
// login/consent forms, which the test drives over plain HTTP with a cookie jar.
// Usage: node oidc-provider.mjs <client_id> <client_secret> <redirect_uri>; prints {"issuer": ...}.
import http from "node:http";
import Provider from "oidc-provider";

const [clientId, clientSecret, redirectUri] = process.argv.slice(2);
const accounts = {
  ada: { email: "ada@example.test", email_verified: true },
};

const server = http.createServer();
server.listen(0, "127.0.0.1", () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: [redirectUri],
        response_types: ["code"],
        grant_types: ["authorization_code"],
        token_endpoint_auth_method: "client_secret_basic",
      },
    ],
    pkce: { required: () => true },
    claims: { openid: ["sub"], email: ["email", "email_verified"] },
    features: { claimsParameter: { enabled: true }, devInteractions: { enabled: true } },
    async findAccount(_ctx, id) {
      return {
        accountId: id,
        async claims() {
          return { sub: id, ...(accounts[id] ?? {}) };
        },
      };
    },
  });
  server.on("request", provider.callback());
  process.stdout.write(JSON.stringify({ issuer }) + "\n");
});
process.on("SIGTERM", () => process.exit(0));
