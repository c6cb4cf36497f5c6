//! The SQLite database: schema, migrations, the single writer, queries.
