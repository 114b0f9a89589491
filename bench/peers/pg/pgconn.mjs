// The connection of the PostgreSQL peers (bench/compare.py's pg_items): the libpq keyword string
// tests/pg/server.sh prints ("host=/sock/dir port=N dbname=postgres user=postgres"), with the
// arm's own database in place of its dbname, as node-postgres options and as a URL.
export function arg(name, def) {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : def;
}

export function parseKeywords(s) {
  const out = {};
  for (const part of s.trim().split(/\s+/)) {
    const eq = part.indexOf("=");
    if (eq > 0) out[part.slice(0, eq)] = part.slice(eq + 1);
  }
  return out;
}

// { host, port, user, database } for pg.Pool, and postgresql://user@/db?host=…&port=… (a Unix
// socket folder in `host`, which node-postgres' connection-string parser understands).
export function connection(keywords, database) {
  const k = parseKeywords(keywords);
  const db = database ?? k.dbname ?? "postgres";
  const pg = { host: k.host, port: Number(k.port ?? 5432), user: k.user, database: db };
  const q = new URLSearchParams({ host: k.host ?? "localhost", port: String(pg.port) });
  const url = `postgresql://${encodeURIComponent(k.user ?? "postgres")}@localhost/${db}?${q}`;
  return { pg, url };
}
