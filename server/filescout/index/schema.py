"""The index's tables, as a history of migrations. Each room of the index package owns (writes)
some of these tables; the history stays in one place because a version is one step for all."""

from __future__ import annotations

APPLICATION_ID = 0x46534354  # "FSCT": marks a SQLite file as a filescout index
SCHEMA_VERSION = 12

MIGRATIONS: dict[int, str] = {
    1: """
    CREATE TABLE meta (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL
    ) WITHOUT ROWID;
    CREATE TABLE files (
        id INTEGER PRIMARY KEY,
        path TEXT NOT NULL UNIQUE,
        size INTEGER NOT NULL,
        mtime_ns INTEGER NOT NULL,
        hash TEXT NOT NULL,
        language TEXT,
        kind TEXT NOT NULL,
        sensitive INTEGER NOT NULL DEFAULT 0,
        annotator TEXT
    );
    CREATE INDEX files_by_hash ON files(hash);
    CREATE TABLE annotations (
        hash TEXT NOT NULL,
        annotator TEXT NOT NULL,
        summary TEXT NOT NULL,
        tags TEXT NOT NULL,
        symbols TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        PRIMARY KEY (hash, annotator)
    ) WITHOUT ROWID;
    CREATE VIRTUAL TABLE files_fts USING fts5(
        path, symbols, summary, tags,
        tokenize = 'porter unicode61 remove_diacritics 2'
    );
    """,
    2: """
    ALTER TABLE files ADD COLUMN skip_reason TEXT;
    UPDATE files SET skip_reason = CASE
        WHEN sensitive THEN 'sensitive'
        WHEN kind IN ('binary', 'generated') THEN kind
    END;
    ALTER TABLE files DROP COLUMN sensitive;
    CREATE TABLE access (
        path TEXT PRIMARY KEY,
        count INTEGER NOT NULL,
        last_access REAL NOT NULL,
        rank REAL NOT NULL
    ) WITHOUT ROWID;
    CREATE INDEX access_by_rank ON access(rank);
    """,
    3: """
    ALTER TABLE annotations ADD COLUMN imports TEXT NOT NULL DEFAULT '[]';
    ALTER TABLE annotations ADD COLUMN input_tokens INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE annotations ADD COLUMN output_tokens INTEGER NOT NULL DEFAULT 0;
    CREATE TABLE usage (
        day TEXT NOT NULL,
        annotator TEXT NOT NULL,
        calls INTEGER NOT NULL DEFAULT 0,
        failures INTEGER NOT NULL DEFAULT 0,
        input_tokens INTEGER NOT NULL DEFAULT 0,
        output_tokens INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (day, annotator)
    ) WITHOUT ROWID;
    """,
    4: """
    CREATE INDEX files_unannotated ON files(path) WHERE annotator IS NULL AND skip_reason IS NULL;
    CREATE INDEX files_by_annotator ON files(annotator);
    """,
    5: """
    ALTER TABLE files ADD COLUMN summary TEXT NOT NULL DEFAULT '';
    ALTER TABLE files ADD COLUMN tags TEXT NOT NULL DEFAULT '[]';
    UPDATE files SET summary = a.summary, tags = a.tags FROM annotations AS a
        WHERE a.hash = files.hash AND a.annotator = files.annotator;
    CREATE TABLE contents (
        id INTEGER PRIMARY KEY,
        hash TEXT NOT NULL UNIQUE,
        words BLOB NOT NULL
    );
    CREATE VIRTUAL TABLE body_fts USING fts5(
        body,
        content = '',
        tokenize = 'unicode61 remove_diacritics 2'
    );
    CREATE VIRTUAL TABLE body_terms USING fts5vocab(body_fts, 'row');
    """,
    7: """
    CREATE TABLE definitions (
        content_id INTEGER PRIMARY KEY,
        described BLOB NOT NULL,
        words BLOB NOT NULL
    );
    CREATE VIRTUAL TABLE definitions_fts USING fts5(
        name, container, signature, doc,
        content = '',
        tokenize = 'porter unicode61 remove_diacritics 2'
    );
    CREATE TABLE import_keys (
        key TEXT NOT NULL,
        file_id INTEGER NOT NULL,
        PRIMARY KEY (key, file_id)
    ) WITHOUT ROWID;
    CREATE INDEX import_keys_by_file ON import_keys(file_id);
    """,
    6: """
    CREATE TABLE commits (
        id INTEGER PRIMARY KEY,
        sha BLOB NOT NULL,
        time INTEGER NOT NULL,
        changed INTEGER NOT NULL,
        subject TEXT NOT NULL
    );
    CREATE TABLE history_paths (
        id INTEGER PRIMARY KEY,
        path TEXT NOT NULL UNIQUE
    );
    CREATE TABLE commit_files (
        commit_id INTEGER NOT NULL,
        path_id INTEGER NOT NULL,
        PRIMARY KEY (commit_id, path_id)
    ) WITHOUT ROWID;
    CREATE INDEX commit_files_by_path ON commit_files(path_id, commit_id);
    CREATE VIRTUAL TABLE commits_fts USING fts5(
        message,
        content = '',
        tokenize = 'unicode61 remove_diacritics 2'
    );
    CREATE VIRTUAL TABLE commits_terms USING fts5vocab(commits_fts, 'row');
    CREATE TABLE history_state (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        tip TEXT,
        newest INTEGER NOT NULL,
        built_ms INTEGER NOT NULL
    );
    """,
    9: """
    CREATE TABLE directories (
        path TEXT PRIMARY KEY,
        mtime_ns INTEGER NOT NULL,
        ctime_ns INTEGER NOT NULL,
        inode INTEGER NOT NULL,
        device INTEGER NOT NULL,
        settled INTEGER NOT NULL,
        ignore_digest TEXT NOT NULL,
        files TEXT NOT NULL,
        subdirs TEXT NOT NULL
    ) WITHOUT ROWID;
    """,
    10: """
    CREATE TABLE directory_summaries (
        key TEXT NOT NULL,
        annotator TEXT NOT NULL,
        summary TEXT NOT NULL,
        tags TEXT NOT NULL,
        input_tokens INTEGER NOT NULL DEFAULT 0,
        output_tokens INTEGER NOT NULL DEFAULT 0,
        created_at INTEGER NOT NULL,
        PRIMARY KEY (key, annotator)
    ) WITHOUT ROWID;
    """,
    11: """
    -- Documents and images became kinds of their own, their text and facts read (they were binary,
    -- an SVG data): the next scan reads them again, as if they had changed.
    UPDATE files SET mtime_ns = 0 WHERE
        path LIKE '%.pdf'
        OR path LIKE '%.docx'
        OR path LIKE '%.pptx'
        OR path LIKE '%.xlsx'
        OR path LIKE '%.png'
        OR path LIKE '%.jpg'
        OR path LIKE '%.jpeg'
        OR path LIKE '%.gif'
        OR path LIKE '%.webp'
        OR path LIKE '%.bmp'
        OR path LIKE '%.tif'
        OR path LIKE '%.tiff'
        OR path LIKE '%.ico'
        OR path LIKE '%.svg';
    -- An SVG's structural annotation described it as XML data: it is described as an image now.
    DELETE FROM annotations WHERE annotator LIKE 'structural/%'
        AND hash IN (SELECT hash FROM files WHERE path LIKE '%.svg');
    """,
    12: """
    -- A status counts the files by state and kind: from this index alone, in its order (14 ms at
    -- 100K files instead of 105 ms reading the whole table), while annotation commits every moment.
    DROP INDEX files_by_annotator;
    CREATE INDEX files_by_annotator ON files(annotator, skip_reason, kind);
    """,
}


def statements(script: str) -> list[str]:
    return [statement.strip() for statement in script.split(";") if statement.strip()]
