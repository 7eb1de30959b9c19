"""Questions written as issues: bug reports and feature requests pasted whole, with prose, code
blocks, tracebacks, logs and version listings. What the report analyser finds in them, how
that reaches the search terms and mentions, and that a report's innermost workspace frame
decides the ranking of a small workspace."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from filescout.core.words import unique_words
from filescout.engine import Workspace
from filescout.relevance.mentions import NAMES_FRAME, NAMES_LINK, mentions, name_files
from filescout.relevance.query import MAX_TERMS, analyse
from filescout.relevance.report import BLOCK_LINES, is_report, read_report
from filescout_protocol.types import FindRelevantParams

INSTALLED_TRACEBACK = """\
DateTime fields cannot be used as inner field for List
Between releases 3.0.0rc8 and 3.0.0rc9, `DateTime` fields have started throwing an error when
used as inner fields of container fields like `List`.

```python
from shapes import fields, Schema

class MySchema(Schema):
    times = fields.List(fields.DateTime())

s = MySchema()
```

Traceback:
```
Traceback (most recent call last):
  File "test-mm.py", line 8, in <module>
    s = MySchema()
  File "/Users/v/.pyenv/versions/3.6/lib/python3.6/site-packages/shapes/schema.py", line 383, in __init__
    self.fields = self._init_fields()
  File "/Users/v/.pyenv/versions/3.6/lib/python3.6/site-packages/shapes/schema.py", line 913, in _init_fields
    self._bind_field(field_name, field_obj)
  File "/Users/v/.pyenv/versions/3.6/lib/python3.6/site-packages/shapes/fields.py", line 636, in _bind_to_schema
    self.inner._bind_to_schema(field_name, self)
  File "/usr/lib/python3.6/functools.py", line 10, in wrapper
    return f()
AttributeError: 'List' object has no attribute 'opts'
```

### Environment
- OS: macOS 10.15
- Python 3.6.8
- shapes==3.0.0

Thanks for looking into this, it blocks our upgrade.
"""


def test_a_report_is_told_from_a_commit_message() -> None:
    short = "Fix the router's handling of trailing slashes\n\nIt dropped them before matching."
    assert not is_report(short, len(unique_words(short)))
    assert is_report(INSTALLED_TRACEBACK, len(unique_words(INSTALLED_TRACEBACK)))
    long_prose = " ".join(f"word{n}" for n in range(60))
    assert is_report(long_prose, len(unique_words(long_prose)))


def test_frames_come_innermost_first_with_installed_packages_cut_to_their_own_path() -> None:
    report = read_report(INSTALLED_TRACEBACK)
    assert report.title == "DateTime fields cannot be used as inner field for List"
    # functools is the standard library's; the user's script stays, with no directory.
    assert [(frame.path, frame.function, frame.depth) for frame in report.frames] == [
        ("shapes/fields.py", "_bind_to_schema", 0),
        ("shapes/schema.py", "_init_fields", 1),
        ("shapes/schema.py", "__init__", 2),
        ("test-mm.py", "", 3),
    ]
    assert all(frame.installed for frame in report.frames[:3])
    assert report.errors == (("AttributeError", "'List' object has no attribute 'opts'"),)
    assert report.spans == ("DateTime", "List")
    assert any("fields.List(fields.DateTime())" in block for block in report.code)
    prose = " ".join(report.prose)
    assert "macOS" not in prose and "3.6.8" not in prose  # the environment section is dropped
    assert "Thanks" in prose


def test_tracebacks_of_other_languages_are_read_cheaply() -> None:
    node = "TypeError: x is undefined\n    at mergeConfig (/app/node_modules/axios/lib/core/mergeConfig.js:10:5)\n"
    node += "    at Axios.request (/app/node_modules/axios/lib/core/Axios.js:42:11)\n"
    report = read_report("Crash in request\n```\n" + node + "```\n")
    assert [(frame.path, frame.function) for frame in report.frames] == [
        ("axios/lib/core/mergeConfig.js", "mergeConfig"),
        ("axios/lib/core/Axios.js", "request"),
    ]
    java = "java.lang.IllegalStateException: closed\n\tat com.acme.web.Router.dispatch(Router.java:42)\n"
    assert read_report("Router fails\n" + java).frames[0].path == "com/acme/web/Router.java"
    go = "panic: nil map\n\ngoroutine 1 [running]:\nexample.com/app/router.(*Router).Handle(0x0)\n"
    go += "\t/home/u/app/router/router.go:42 +0x1d\n"
    frame = read_report("Panic in router\n```\n" + go + "```\n").frames[0]
    assert (frame.path, frame.function) == ("/home/u/app/router/router.go", "Handle")
    rust = "thread 'main' panicked at 'boom', src/parser.rs:10:5\n   7: mycrate::parser::parse\n"
    rust += "             at src/parser.rs:10:5\n"
    frame = read_report("Parser panics\n```\n" + rust + "```\n").frames[0]
    assert (frame.path, frame.function) == ("src/parser.rs", "parse")


def test_chained_tracebacks_are_numbered_and_an_unfenced_one_is_still_read() -> None:
    text = """Crash in the cache
Some prose first.

Traceback (most recent call last):
  File "/src/app/cache.py", line 3, in get
    return store[key]
KeyError: 'x'

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "/src/app/loader.py", line 9, in load
    raise LoadError(key)
app.errors.LoadError: x
and some prose after it.
"""
    report = read_report(text)
    # Raised while handling the first: the second is the failure that matters.
    assert [(frame.path, frame.trace) for frame in report.frames] == [
        ("/src/app/loader.py", 0),
        ("/src/app/cache.py", 1),
    ]
    assert ("app.errors.LoadError", "x") in report.errors
    assert not any("store[key]" in paragraph for paragraph in report.prose)
    assert any("prose after" in paragraph for paragraph in report.prose)
    # Raised `from` the first: the first is the cause, the second a wrapper.
    caused = read_report(
        text.replace(
            "During handling of the above exception, another exception occurred",
            "The above exception was the direct cause of the following exception",
        )
    )
    assert [(frame.path, frame.trace) for frame in caused.frames] == [
        ("/src/app/cache.py", 0),
        ("/src/app/loader.py", 1),
    ]


def test_a_long_log_is_cut_and_links_to_source_lines_are_paths() -> None:
    log = "\n".join(f"2024-01-01 10:00:{n % 60:02d} INFO step {n} value_{n}" for n in range(200))
    code = "\n".join(f"call_{n}()" for n in range(200))
    text = (
        "Slow import\nSee https://github.com/acme/shop/blob/0a1b2c/src/shop/cart.py#L10-L20 and "
        "https://github.com/acme/shop/blob/main/CODE_OF_CONDUCT.md\n\n```\n"
        + log
        + "\n```\n\n```\n"
        + code
        + "\n```\n"
    )
    report = read_report(text)
    assert report.links == ("src/shop/cart.py",)  # a policy linked is no source
    assert all(len(block.splitlines()) <= BLOCK_LINES for block in report.code)
    assert not any("INFO" in block for block in report.code)


def test_short_questions_are_analysed_as_before() -> None:
    for question in [
        "Fix `url_for` when the endpoint has a trailing slash",
        "fix(router): keep the query string on redirects\n\nThe router dropped it since routing.py changed.",
    ]:
        query = analyse(question)
        assert query.terms == unique_words(" ".join([*mentions(question).words, question]))[:MAX_TERMS]
        assert query.mentions == mentions(question)
        assert query.history_terms is None and query.history_share == 1.0


def test_a_reports_code_and_traceback_reach_the_terms_despite_long_prose() -> None:
    prose = " ".join(f"sentence{n} about nothing in particular" for n in range(80))
    query = analyse(prose + "\n\n" + INSTALLED_TRACEBACK)
    assert {"bind_to_schema", "attributeerror", "opts"} <= set(query.terms)
    assert len(query.terms) <= MAX_TERMS
    assert "py" not in query.terms and "python" not in query.terms
    assert query.history_share < 1.0 and query.history_terms and len(query.history_terms) < len(query.terms)
    assert {"MySchema", "_bind_to_schema"} <= query.mentions.symbols


def test_the_innermost_workspace_frame_names_its_file_most() -> None:
    query = analyse(INSTALLED_TRACEBACK)
    tree = ["src/shapes/fields.py", "src/shapes/schema.py", "src/shapes/other/fields.py", "tools/test-mm.py"]
    namings = name_files(query.mentions, tree)
    assert namings["src/shapes/fields.py"].lift == NAMES_FRAME
    assert "innermost frame" in namings["src/shapes/fields.py"].reason
    assert namings["src/shapes/schema.py"].lift < NAMES_FRAME
    # The package's path must match whole (`fields.List` still names it as a module, weakly).
    assert "frame" not in namings["src/shapes/other/fields.py"].reason
    assert "tools/test-mm.py" not in namings  # a bare script name is the user's


def test_a_reports_links_name_their_files_and_its_own_paths_name_no_namesake() -> None:
    text = (
        "pylint fails on a package without __init__.py\n"
        "With `src/project/__init__.py` missing, loading fails in "
        "https://github.com/acme/lint/blob/main/lint/modutils.py#L20\n"
    )
    namings = name_files(
        analyse(text).mentions, ["lint/__init__.py", "lint/modutils.py", "lint/nodes/__init__.py"]
    )
    assert namings["lint/modutils.py"].lift == NAMES_LINK
    assert "lint/__init__.py" not in namings and "lint/nodes/__init__.py" not in namings
    # A short question is read as before: a written path's file name names its namesakes.
    assert "lint/__init__.py" in name_files(mentions("fix src/project/__init__.py"), ["lint/__init__.py"])


def test_the_analyser_is_fast_on_hostile_text() -> None:
    for blob in ["1.2." * 3000, "x_" * 5000, "at " + "a " * 5000 + "(", "  12: " + "a::" * 5000, "`" * 5000]:
        started = time.perf_counter()
        analyse("title\n```\n" + blob + "\n```\n" + blob)
        assert time.perf_counter() - started < 0.5


SHOP = {
    "src/shop/__init__.py": "",
    "src/shop/store.py": (
        "from shop.pricing import price_of\n\n\nclass Store:\n"
        '    """The store: items, stock, orders and the store front."""\n\n'
        "    def checkout(self, cart):\n        return sum(price_of(item) for item in cart)\n\n"
        "    def store_front(self):\n        return 'store'\n"
    ),
    "src/shop/pricing.py": (
        "def price_of(item):\n    return item.base * discount(item)\n\n\n"
        "def discount(item):\n    return 1 - item.rebate\n"
    ),
    "src/shop/cli.py": (
        "from shop.store import Store\n\n\ndef main(cart):\n    # run the store from the command line\n"
        "    return Store().checkout(cart)\n"
    ),
    "src/shop/inventory.py": "def stock(store):\n    return store.items  # the store's stock\n",
    "README.md": "# Shop\n\nA store: checkout, inventory, pricing.\n",
}

SHOP_REPORT = """\
Checkout in the store crashes with some items
When I check out a cart in the store, the store crashes. The store worked before; the store
front still works and the store's inventory is fine. I think the store is broken.

```python
from shop.cli import main
main([Item(base=3)])
```

```
Traceback (most recent call last):
  File "/home/me/venv/lib/python3.11/site-packages/shop/cli.py", line 6, in main
    return Store().checkout(cart)
  File "/home/me/venv/lib/python3.11/site-packages/shop/store.py", line 8, in checkout
    return sum(price_of(item) for item in cart)
  File "/home/me/venv/lib/python3.11/site-packages/shop/pricing.py", line 5, in discount
    return 1 - item.rebate
AttributeError: 'Item' object has no attribute 'rebate'
```

### Versions
shop 1.2.3
"""


@pytest.mark.asyncio
async def test_a_reports_innermost_workspace_frame_ranks_first(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    for relative, text in SHOP.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    engine = await Workspace.open(root, env={"FILESCOUT_CACHE_DIR": str(tmp_path / "cache")})
    try:
        engine.start_indexing("index")
        await engine.wait_idle()
        result = await engine.find_relevant(FindRelevantParams(query=SHOP_REPORT, limit=5))
    finally:
        await engine.close()
    ranked = [item.path for item in result.items]
    assert ranked[0] == "src/shop/pricing.py", ranked
    assert "innermost frame" in result.items[0].reason
