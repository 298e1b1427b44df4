//! The two migration trees, `migrations/postgres` and `migrations/sqlite`, are written by
//! hand and must describe one schema. This test migrates a fresh database of each engine
//! and compares what the engines report back, so a column, index or `NOT NULL` added to
//! one tree and forgotten in the other fails here instead of in production.
//!
//! What is compared, per table (`_sqlx_migrations` aside):
//! - the columns, each with its nullability and its type family (below);
//! - the primary key's columns, in order;
//! - every other index as (columns in order, unique, partial). Names are left out: an index
//!   behind a `UNIQUE` constraint is named by the engine (`outbox_id_key` on Postgres,
//!   `sqlite_autoindex_outbox_1` on SQLite), so only its shape can be compared. Partial
//!   predicates and expressions are compared only as "there is one": their text is printed
//!   differently by each engine.
//!
//! Types are compared through families, because the engines spell them differently by
//! nature: Postgres `text`, `jsonb` and `timestamptz` and SQLite `TEXT` are "text"; `int2`,
//! `int4`, `int8` and `bool` and SQLite `INTEGER`, `BIGINT` and `BOOLEAN` are "integer";
//! `uuid` and `bytea` and SQLite `BLOB` are "blob"; `float4`, `float8` and SQLite `REAL`
//! and `DOUBLE` are "real" (the store binds uuids as 16 bytes and times as RFC 3339 text on
//! SQLite). A type outside this list fails the test so that the list is extended on
//! purpose.
//!
//! SQLite reports a non-integer primary key column as nullable (a legacy quirk of the
//! engine); the store never writes NULL there, so primary key columns count as `NOT NULL`
//! on both sides.
//!
//! A difference that is meant to stay is listed in [`KNOWN_DIFFERENCES`] with its reason.

use std::collections::{BTreeMap, BTreeSet};

use gatehouse_tests::{Backend, TestDb};
use sqlx::{Connection, PgConnection, Row, SqliteConnection};

/// Differences between the trees that are deliberate, each with why. Empty: the trees
/// agree today.
const KNOWN_DIFFERENCES: &[(&str, &str)] = &[];

#[derive(Debug, Default, PartialEq, Eq)]
struct Table {
    /// Column name → (type family, nullable).
    columns: BTreeMap<String, (String, bool)>,
    primary_key: Vec<String>,
    /// (columns, unique, partial) of every index but the primary key's.
    indexes: BTreeSet<(Vec<String>, bool, bool)>,
}

type Schema = BTreeMap<String, Table>;

#[tokio::test]
async fn postgres_and_sqlite_migrations_build_the_same_schema() {
    let postgres = TestDb::new(Backend::Postgres).await;
    let sqlite = TestDb::new(Backend::Sqlite).await;
    let left = postgres_schema(&postgres.url).await;
    let right = sqlite_schema(&sqlite.url).await;
    postgres.cleanup().await;
    sqlite.cleanup().await;

    let found = differences(&left, &right);
    let known: BTreeSet<String> = KNOWN_DIFFERENCES
        .iter()
        .map(|(difference, _why)| (*difference).to_owned())
        .collect();
    let unexplained: Vec<&String> = found.iter().filter(|d| !known.contains(*d)).collect();
    let stale: Vec<&String> = known.iter().filter(|d| !found.contains(*d)).collect();
    assert!(
        unexplained.is_empty(),
        "migrations/postgres and migrations/sqlite differ (add a migration to the lagging \
         side, or list a deliberate difference in KNOWN_DIFFERENCES):\n{}",
        unexplained
            .iter()
            .map(|d| format!("  {d}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(
        stale.is_empty(),
        "KNOWN_DIFFERENCES lists differences that are gone: {stale:?}"
    );
    assert!(left.len() > 10, "too few tables found: {:?}", left.keys());
}

/// One line per difference, e.g. `runs.project: nullable on postgres, not on sqlite`.
fn differences(postgres: &Schema, sqlite: &Schema) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let names: BTreeSet<&String> = postgres.keys().chain(sqlite.keys()).collect();
    for name in names {
        let (p, s) = match (postgres.get(name), sqlite.get(name)) {
            (Some(p), Some(s)) => (p, s),
            (Some(_), None) => {
                found.insert(format!("{name}: only on postgres"));
                continue;
            }
            (None, _) => {
                found.insert(format!("{name}: only on sqlite"));
                continue;
            }
        };
        let columns: BTreeSet<&String> = p.columns.keys().chain(s.columns.keys()).collect();
        for column in columns {
            match (p.columns.get(column), s.columns.get(column)) {
                (Some(pc), Some(sc)) if pc == sc => {}
                (Some((pt, pn)), Some((st, sn))) => {
                    if pt != st {
                        found.insert(format!("{name}.{column}: {pt} on postgres, {st} on sqlite"));
                    }
                    if pn != sn {
                        found.insert(format!(
                            "{name}.{column}: nullable {pn} on postgres, {sn} on sqlite"
                        ));
                    }
                }
                (Some(_), None) => {
                    found.insert(format!("{name}.{column}: only on postgres"));
                }
                (None, _) => {
                    found.insert(format!("{name}.{column}: only on sqlite"));
                }
            }
        }
        if p.primary_key != s.primary_key {
            found.insert(format!(
                "{name}: primary key {:?} on postgres, {:?} on sqlite",
                p.primary_key, s.primary_key
            ));
        }
        for index in p.indexes.difference(&s.indexes) {
            found.insert(format!("{name}: index {index:?} only on postgres"));
        }
        for index in s.indexes.difference(&p.indexes) {
            found.insert(format!("{name}: index {index:?} only on sqlite"));
        }
    }
    found
}

async fn postgres_schema(url: &str) -> Schema {
    let mut conn = PgConnection::connect(url).await.expect("connect");
    let mut schema = Schema::new();
    let tables = sqlx::query(
        "SELECT table_name::text FROM information_schema.tables
         WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'
           AND table_name <> '_sqlx_migrations'",
    )
    .fetch_all(&mut conn)
    .await
    .expect("tables");
    for row in tables {
        schema.insert(row.get(0), Table::default());
    }
    let columns = sqlx::query(
        "SELECT table_name::text, column_name::text, udt_name::text, is_nullable = 'YES'
         FROM information_schema.columns WHERE table_schema = current_schema()",
    )
    .fetch_all(&mut conn)
    .await
    .expect("columns");
    for row in columns {
        let table: String = row.get(0);
        if let Some(t) = schema.get_mut(&table) {
            let udt: String = row.get(2);
            t.columns
                .insert(row.get(1), (postgres_family(&udt), row.get(3)));
        }
    }
    let indexes = sqlx::query(
        "SELECT t.relname::text, ix.indisprimary, ix.indisunique, ix.indpred IS NOT NULL,
                ARRAY(SELECT COALESCE(a.attname::text, '<expression>')
                      FROM unnest(ix.indkey::int2[]) WITH ORDINALITY AS k(attnum, ord)
                      LEFT JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum
                      ORDER BY k.ord)
         FROM pg_index ix
         JOIN pg_class t ON t.oid = ix.indrelid
         JOIN pg_namespace n ON n.oid = t.relnamespace
         WHERE n.nspname = current_schema()",
    )
    .fetch_all(&mut conn)
    .await
    .expect("indexes");
    for row in indexes {
        let table: String = row.get(0);
        if let Some(t) = schema.get_mut(&table) {
            let columns: Vec<String> = row.get(4);
            if row.get::<bool, _>(1) {
                t.primary_key = columns;
            } else {
                t.indexes.insert((columns, row.get(2), row.get(3)));
            }
        }
    }
    conn.close().await.expect("close");
    schema
}

async fn sqlite_schema(url: &str) -> Schema {
    let mut conn = SqliteConnection::connect(url).await.expect("connect");
    let mut schema = Schema::new();
    let tables: Vec<String> = sqlx::query_scalar(
        "SELECT name FROM sqlite_master WHERE type = 'table'
         AND name NOT LIKE 'sqlite_%' AND name <> '_sqlx_migrations'",
    )
    .fetch_all(&mut conn)
    .await
    .expect("tables");
    for name in tables {
        let mut table = Table::default();
        let columns = sqlx::query("SELECT name, type, \"notnull\", pk FROM pragma_table_info(?)")
            .bind(&name)
            .fetch_all(&mut conn)
            .await
            .expect("columns");
        let mut primary_key = Vec::new();
        for row in columns {
            let column: String = row.get(0);
            let declared: String = row.get(1);
            let not_null: bool = row.get(2);
            let pk: i64 = row.get(3);
            if pk > 0 {
                primary_key.push((pk, column.clone()));
            }
            table
                .columns
                .insert(column, (sqlite_family(&declared), !(not_null || pk > 0)));
        }
        primary_key.sort();
        table.primary_key = primary_key.into_iter().map(|(_, c)| c).collect();
        let indexes =
            sqlx::query("SELECT name, \"unique\", origin, partial FROM pragma_index_list(?)")
                .bind(&name)
                .fetch_all(&mut conn)
                .await
                .expect("indexes");
        for row in indexes {
            let index: String = row.get(0);
            let origin: String = row.get(2);
            if origin == "pk" {
                continue;
            }
            let columns: Vec<Option<String>> =
                sqlx::query_scalar("SELECT name FROM pragma_index_info(?) ORDER BY seqno")
                    .bind(&index)
                    .fetch_all(&mut conn)
                    .await
                    .expect("index columns");
            let columns = columns
                .into_iter()
                .map(|c| c.unwrap_or_else(|| "<expression>".to_owned()))
                .collect();
            table.indexes.insert((columns, row.get(1), row.get(3)));
        }
        schema.insert(name, table);
    }
    conn.close().await.expect("close");
    schema
}

fn postgres_family(udt: &str) -> String {
    match udt {
        "text" | "varchar" | "jsonb" | "json" | "timestamptz" => "text",
        "int2" | "int4" | "int8" | "bool" => "integer",
        "uuid" | "bytea" => "blob",
        "float4" | "float8" => "real",
        other => panic!("Postgres type `{other}` has no family: extend postgres_family"),
    }
    .to_owned()
}

fn sqlite_family(declared: &str) -> String {
    match declared.to_ascii_uppercase().as_str() {
        "TEXT" => "text",
        "INTEGER" | "BIGINT" | "BOOLEAN" => "integer",
        "BLOB" => "blob",
        "REAL" | "DOUBLE" => "real",
        other => panic!("SQLite type `{other}` has no family: extend sqlite_family"),
    }
    .to_owned()
}
