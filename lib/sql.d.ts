// schema.sql is imported as text so the compiled binary carries its own migrations.
declare module "*.sql" {
  const text: string;
  export default text;
}
