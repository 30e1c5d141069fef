// The API document, generated from the route table and the very zod schemas that validate
// requests, so the document and the behaviour cannot drift apart (handlers/routes.ts).
import { z } from "zod";
import { describeRule, isProjectRule, ruleErrors, type AuthRule, type LoadedRoute } from "./route.ts";
import { ERROR_STATUS, type ErrorCode } from "./errors.ts";
import { DEFAULT_BODY_LIMIT_BYTES } from "./io.ts";

type Json = Record<string, unknown>;

function schemaOf(schema: z.ZodType, io: "input" | "output"): Json {
  const out = z.toJSONSchema(schema, { target: "draft-2020-12", io, unrepresentable: "any" }) as Json;
  delete out.$schema;
  return out;
}

export const ErrorBody = z.object({
  code: z.string().describe("snake_case error code from the catalogue"),
  message: z.string().describe("a sentence for a person"),
  details: z
    .array(z.object({ path: z.string(), message: z.string(), line: z.number().int().optional(), column: z.number().int().optional() }))
    .optional()
    .describe("validation failures, one per field (invalid_pipeline_file: with the line and column in the file)"),
});

const SECURITY: Record<Exclude<AuthRule, object>, Json[]> = {
  public: [],
  webhook: [{ githubSignature: [] }, { gitlabToken: [] }],
  setup: [{ setupToken: [] }],
  session: [{ session: [] }],
  user: [{ session: [] }, { apiToken: [] }],
  maintainer: [{ session: [] }, { apiToken: [] }],
  admin: [{ session: [] }, { apiToken: [] }],
  owner: [{ session: [] }, { apiToken: [] }],
  metrics: [{ metricsToken: [] }],
  runner: [{ runnerToken: [] }],
  stream: [{ streamToken: [] }],
};

function securityOf(rule: AuthRule): Json[] {
  return isProjectRule(rule) ? SECURITY.user : SECURITY[rule];
}

function parameters(schema: z.ZodObject<z.ZodRawShape> | undefined, where: "path" | "query"): Json[] {
  if (!schema) return [];
  const json = schemaOf(schema, "input");
  const properties = (json.properties ?? {}) as Record<string, Json>;
  const required = new Set((json.required ?? []) as string[]);
  return Object.entries(properties).map(([name, s]) => ({
    name,
    in: where,
    required: where === "path" ? true : required.has(name),
    ...(typeof s.description === "string" ? { description: s.description } : {}),
    schema: s,
  }));
}

export function buildOpenApiDocument(routes: LoadedRoute[]): Json {
  const paths: Record<string, Record<string, Json>> = {};
  for (const { method, path, auth, tag, endpoint } of routes) {
    const responses: Record<string, Json> = {};
    const success = String(endpoint.successStatus ?? 200);
    const content: Record<string, Json> = {};
    if (endpoint.response) content["application/json"] = { schema: schemaOf(endpoint.response, "output") };
    for (const type of endpoint.produces ?? []) content[type] = { schema: { type: "string" } };
    responses[success] = { description: "Success", ...(Object.keys(content).length ? { content } : {}) };
    const byStatus = new Map<number, ErrorCode[]>();
    // Any request may fail unexpectedly or find the database server down, and any that writes (most do, if only a last-used time) may find the disk full.
    // The route's auth rule adds its own refusals (401/403, and 404 for a project the caller may not see).
    const codes = new Set<ErrorCode>([...ruleErrors(auth), ...(endpoint.errors ?? []), "internal_error", "database_unavailable", "insufficient_storage"]);
    if (endpoint.body) ["invalid_request", "malformed_json", "unsupported_media_type", "payload_too_large"].forEach((c) => codes.add(c as ErrorCode));
    if (endpoint.params || endpoint.query) codes.add("invalid_request");
    for (const code of codes) byStatus.set(ERROR_STATUS[code], [...(byStatus.get(ERROR_STATUS[code]) ?? []), code]);
    for (const [status, list] of [...byStatus.entries()].sort((a, b) => a[0] - b[0])) {
      responses[String(status)] = {
        description: `Error: ${list.join(", ")}`,
        content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } },
      };
    }
    const operation: Json = {
      operationId: endpoint.operationId,
      summary: endpoint.summary,
      ...(endpoint.description ? { description: endpoint.description } : {}),
      tags: [tag],
      "x-roost-auth": describeRule(auth),
      security: securityOf(auth),
      parameters: [...parameters(endpoint.params, "path"), ...parameters(endpoint.query, "query")],
      responses,
    };
    if (endpoint.body) {
      operation.requestBody = {
        required: true,
        description: `JSON, at most ${endpoint.bodyLimitBytes ?? DEFAULT_BODY_LIMIT_BYTES} bytes.`,
        content: { "application/json": { schema: schemaOf(endpoint.body, "input") } },
      };
    }
    (paths[path] ??= {})[method.toLowerCase()] = operation;
  }
  return {
    openapi: "3.1.0",
    info: {
      title: "Roost API",
      version: "1",
      description: "Self-hosted CI for Flutter apps. Every error is {code, message} (plus details for validation). Timestamps are Unix epoch seconds.",
    },
    servers: [{ url: "/" }],
    paths,
    components: {
      schemas: { Error: schemaOf(ErrorBody, "output") },
      securitySchemes: {
        session: { type: "http", scheme: "bearer", description: "User session token (roost_sess_…), 24 hours." },
        apiToken: { type: "http", scheme: "bearer", description: "API token (roost_pat_…)." },
        setupToken: { type: "http", scheme: "bearer", description: "One-time setup token (roost_setup_…), only before setup completes." },
        metricsToken: { type: "http", scheme: "bearer", description: "ROOST_METRICS_TOKEN; without it, /metrics answers loopback peers only." },
        runnerToken: { type: "http", scheme: "bearer", description: "Runner token (roost_rt_…), valid only on its own runner's paths." },
        githubSignature: {
          type: "apiKey",
          in: "header",
          name: "X-Hub-Signature-256",
          description: "HMAC-SHA256 of the raw body with the integration's webhook secret (GitHub).",
        },
        gitlabToken: { type: "apiKey", in: "header", name: "X-Gitlab-Token", description: "The project's webhook token (GitLab)." },
        streamToken: { type: "apiKey", in: "query", name: "token", description: "Stream token (roost_st_…), one build, read-only, 5 minutes to open." },
      },
    },
  };
}
