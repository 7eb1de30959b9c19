"""What the tests and the benchmarks share to drive filescout from outside.

    wire         JSON-RPC frames and a client that times bytes as they arrive (many in flight)
    launch       the server's command line and environment, and starting it
    procfs       what Linux's /proc says about a process: memory, CPU, descriptors, threads
    stats        the one percentile every figure uses
    workspaces   synthetic workspaces, deterministic for a seed
    support      the pytest-lsp client and the small sample workspace of the end-to-end tests
    fake_openai  an OpenAI-compatible server on 127.0.0.1 that can misbehave on purpose
    postgres     a real PostgreSQL cluster started for a run
    ...          and the fuzzing, audit and attack helpers both sides run

It is found without path edits: a script run as `python bench/x.py` has bench/ on its path, and
pytest adds bench/ through `pythonpath` in pyproject.toml.
"""
