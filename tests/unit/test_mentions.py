"""What a question names explicitly, and which files that names: every form of mention, and the
ordinary word that is not one."""

from __future__ import annotations

import pytest

from filescout.relevance.mentions import (
    NAMES_AREA,
    NAMES_FILE,
    NAMES_MODULE,
    NAMES_PATH,
    Mentions,
    code_shaped,
    defined,
    mentions,
    name_files,
)

TREE = [
    "src/flask/app.py",
    "src/flask/json/__init__.py",
    "src/werkzeug/routing/map.py",
    "src/werkzeug/routing/rules.py",
    "src/werkzeug/utils.py",
    "examples/app.py",
    "lib/adapters/http.js",
    "test/unit/adapters/http.js",
    "lib/core/Axios.js",
    "lib/axios.js",
    "lib/core/mergeConfig.js",
    "cmd/server/main.go",
    "internal/router/router.go",
    "src/parser.rs",
    "src/main/java/com/acme/web/Router.java",
    "tpl/template.go",
    "tpl/html/template.go",
    "resources/page/template.go",
]


def named(question: str) -> dict[str, float]:
    return {path: naming.lift for path, naming in name_files(mentions(question), TREE).items()}


def test_a_path_names_its_file_and_only_that_file() -> None:
    assert named("crash in src/flask/app.py on startup") == {"src/flask/app.py": NAMES_PATH}
    assert named(r"lint errors in test\unit\adapters\http.js") == {"test/unit/adapters/http.js": NAMES_PATH}
    assert named("the ./lib/core/Axios module") == {"lib/core/Axios.js": NAMES_PATH}


def test_a_file_name_names_every_file_of_that_name() -> None:
    assert named("routing in map.py is slow") == {"src/werkzeug/routing/map.py": NAMES_FILE}
    assert named("app.py") == {"src/flask/app.py": NAMES_FILE, "examples/app.py": NAMES_FILE}
    assert named("`Axios.js` and http.js")["lib/core/Axios.js"] == NAMES_FILE
    assert "lib/axios.js" not in named("`Axios.js`")  # the same name in the same case wins


def test_a_dotted_module_path_names_the_module() -> None:
    assert named("flask.app is imported twice") == {"src/flask/app.py": NAMES_PATH}
    assert named("werkzeug.routing.map") == {"src/werkzeug/routing/map.py": NAMES_PATH}
    assert named("flask.json.dumps drops keys") == {"src/flask/json/__init__.py": NAMES_PATH}
    assert named("the crate::routing::rules module") == {"src/werkzeug/routing/rules.py": NAMES_PATH}


def test_a_one_part_module_is_confirmed_by_what_it_defines() -> None:
    found = mentions("Parametrize the Response class in utils.redirect.")
    naming = name_files(found, TREE)["src/werkzeug/utils.py"]
    assert naming.lift == NAMES_MODULE
    assert naming.lift_given(["redirect", "url_quote"]) == NAMES_FILE
    assert naming.lift_given(["url_quote"]) == NAMES_MODULE


def test_python_frames() -> None:
    trace = (
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3.11/site-packages/flask/app.py", line 1498, in wsgi_app\n'
        '  File "C:\\proj\\src\\werkzeug\\utils.py", line 12, in redirect\n'
    )
    found = mentions(trace + '  File "<stdin>", line 1, in <module>\n')
    assert {"wsgi_app", "redirect"} <= found.symbols
    assert not any("stdin" in path for path in found.paths)
    assert named(trace) == {"src/flask/app.py": NAMES_PATH, "src/werkzeug/utils.py": NAMES_PATH}


def test_javascript_frames() -> None:
    trace = "TypeError: x is undefined\n    at Axios.request (/srv/app/lib/core/Axios.js:45:12)\n    at Object.<anonymous> (lib/adapters/http.js:10:3)"
    found = mentions(trace)
    assert {"Axios", "request", "Object"} <= found.symbols
    assert "<anonymous>" not in found.symbols
    assert named(trace) == {"lib/core/Axios.js": NAMES_PATH, "lib/adapters/http.js": NAMES_PATH}


def test_go_rust_and_java_frames() -> None:
    assert named("goroutine 1 [running]:\nmain.main()\n\t/home/u/proj/cmd/server/main.go:42 +0x1d") == {
        "cmd/server/main.go": NAMES_PATH
    }
    assert named("thread 'main' panicked\n   at src/parser.rs:10:5") == {"src/parser.rs": NAMES_PATH}
    java = "Exception in thread main\n\tat com.acme.web.Router.dispatch(Router.java:88)"
    assert "dispatch" in mentions(java).symbols
    assert named(java) == {"src/main/java/com/acme/web/Router.java": NAMES_PATH}


def test_identifiers_in_backticks_are_mentions_whatever_their_shape() -> None:
    found = mentions("Support either `cleanup` or `shutdown` in lifespan messages")
    assert {"cleanup", "shutdown"} <= found.symbols
    assert ("cleanup",) in found.modules
    assert mentions("meth:`routing.Map.bind_to_environ` raises").modules == {
        ("routing", "Map", "bind_to_environ")
    }


@pytest.mark.parametrize(
    ("word", "shaped"),
    [
        ("url_for", True),
        ("_prune", True),
        ("__bool__", True),
        ("ERR_NETWORK", True),
        ("mergeConfig", True),
        ("TemplateResolver", True),
        ("LRUCache", True),
        ("ETags", True),
        ("template", False),
        ("Template", False),
        ("CORS", False),
        ("python3", False),
    ],
)
def test_code_shaped_identifiers(word: str, shaped: bool) -> None:
    assert code_shaped(word) is shaped


def test_camel_and_snake_case_identifiers_are_mentions() -> None:
    found = mentions("deprecate make_line_iter, and mergeConfig drops responseEncoding")
    assert {"make_line_iter", "mergeConfig", "responseEncoding"} <= found.symbols
    assert named("mergeConfig drops responseEncoding") == {"lib/core/mergeConfig.js": NAMES_MODULE}


def test_calls_and_attributes_are_symbols_not_modules() -> None:
    found = mentions("Add changed() to loop context; .data and .get_data() again")
    assert {"changed", "data", "get_data"} <= found.symbols
    assert ("changed",) not in found.modules
    assert ("data",) not in found.modules


def test_commit_scopes() -> None:
    found = mentions("fix(router): trailing slash\n\n* feat(dataStructures)!: x\n* fix(requests.py): y")
    assert found.scopes == {"router", "dataStructures"}
    assert "requests.py" in found.paths
    assert "fix" not in found.symbols  # `fix(` is the commit's type, not a call
    assert named("fix(router): trailing slash") == {
        "internal/router/router.go": NAMES_MODULE,
        "src/main/java/com/acme/web/Router.java": NAMES_MODULE,
    }
    assert named("fix(adapter): wrong header")["lib/adapters/http.js"] < NAMES_MODULE  # its folder only
    scoped = name_files(mentions("feat(dataStructures): x"), ["src/datastructures.py"])
    assert scoped["src/datastructures.py"].reason == "the question's scope names this file (`dataStructures`)"


def test_a_written_folder_names_the_files_directly_in_it() -> None:
    """`pkg/path: subject`, as Go and kernel-style commits begin: the file named as the folder
    first, the folder's other files less, nothing in its subfolders or elsewhere."""
    tree = [
        "daemon/events/events.go",
        "daemon/events/filter.go",
        "daemon/events/testutils/testutils.go",
        "api/events/events.go",
        "daemon/daemon.go",
    ]
    named_here = name_files(mentions("daemon/events: make cancelFn idempotent"), tree)
    assert {path: naming.lift for path, naming in named_here.items()} == {
        "daemon/events/events.go": NAMES_MODULE,
        "daemon/events/filter.go": NAMES_AREA,
    }
    assert named_here["daemon/events/filter.go"].reason == "the question names its folder (`daemon/events`)"
    assert name_files(mentions("read/write errors are swallowed"), tree) == {}


def test_an_ordinary_word_equal_to_a_stem_is_not_a_mention() -> None:
    question = "how does hugo decide which template to use"
    assert not mentions(question)
    assert named(question) == {}
    assert named("the router and the app and the parser") == {}


def test_the_same_file_written_as_code_is_a_mention() -> None:
    for question in ("why is `template.go` slow", "why is template.go slow", "why is tpl/template.go slow"):
        assert "tpl/template.go" in named(question), question
    assert "TemplateResolver" in mentions("`TemplateResolver` picks the wrong one").symbols
    assert "TemplateResolver" in mentions("TemplateResolver picks the wrong one").symbols


def test_prose_that_only_looks_like_code_is_not_a_mention() -> None:
    found = mentions("e.g. i.e. on 2.x and v1.2.3, startup/shutdown, Python 3 (see below). Done!")
    assert found.paths <= {"startup/shutdown"}  # only a file `startup/shutdown.*` would match it
    assert not found.modules
    assert not found.scopes
    assert named("e.g. on startup/shutdown") == {}


def test_a_method_call_on_an_object_is_not_a_file_name() -> None:
    found = mentions("res.json() returns a string; see config.json")
    assert "config.json" in found.paths
    assert "res.json" not in found.paths
    assert ("res", "json") in found.modules


def test_defined_keeps_the_files_order_and_exact_case() -> None:
    found = Mentions(symbols=frozenset({"url_for", "Router"}))
    assert defined(found, ["Router", "router", "add_route", "url_for"]) == ["Router", "url_for"]
    assert defined(Mentions(), ["Router"]) == []


def test_the_mentions_words_lead_the_search_terms() -> None:
    from filescout.relevance.query import MAX_TERMS, analyse

    long_question = " ".join(f"word{n}" for n in range(MAX_TERMS * 2)) + " fix `url_for`"
    assert "url_for" in analyse(long_question).terms
