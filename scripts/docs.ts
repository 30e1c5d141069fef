// `npm run docs`: regenerates the parts of docs/ that come from the code: the authorization table
// and the current database schema.
import { readFileSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { routes } from "../handlers/routes.ts";
import { withFreshTable } from "../lib/http/authorization-table.ts";
import { loadRoutes } from "../lib/http/route.ts";
import { currentSchema } from "../lib/db/current-schema.ts";

const file = resolve(import.meta.dir, "../docs/authorization.md");
writeFileSync(file, withFreshTable(readFileSync(file, "utf8"), await loadRoutes(routes)));
console.log(`wrote ${file}`);

const schemaFile = resolve(import.meta.dir, "../docs/schema.md");
writeFileSync(schemaFile, currentSchema());
console.log(`wrote ${schemaFile}`);
