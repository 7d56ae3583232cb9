//! The code tools over a real MCP session: listing, extraction, and every bad input followed by a call that
//! succeeds (the server keeps serving).

use crate::support::common;

use std::{collections::HashSet, io::Write};

use common::{Client, call, is_error, text};
use fault::code::Language;
use serde_json::{Value, json};

async fn list(client: &Client, file: &str) -> (Vec<String>, Value) {
    let result = call(client, "fault_list_function_names", json!({ "file": file }))
        .await
        .unwrap();
    assert!(!is_error(&result), "{}", text(&result));
    let names: Vec<String> = serde_json::from_str(text(&result)).unwrap();
    (names, result.structured_content.clone().unwrap())
}

async fn extract(client: &Client, file: &str, func: &str) -> (Value, Value) {
    let result = call(
        client,
        "fault_extract_code_block",
        json!({ "file": file, "func": func }),
    )
    .await
    .unwrap();
    assert!(!is_error(&result), "{}", text(&result));
    let text_value: Value = serde_json::from_str(text(&result)).unwrap();
    (text_value, result.structured_content.clone().unwrap())
}

/// A tool error whose message contains every one of `needles`, then a valid call that succeeds.
async fn assert_tool_error_then_recovers(
    client: &Client,
    tool: &str,
    args: Value,
    needles: &[&str],
) {
    let result = call(client, tool, args.clone()).await.unwrap();
    assert!(is_error(&result), "expected an error for {args}");
    let message = text(&result);
    for needle in needles {
        assert!(
            message.contains(needle),
            "message for {args} lacks '{needle}': {message}"
        );
    }
    let (names, _) = list(client, &common::code_fixture("sample.py")).await;
    assert!(names.contains(&"plain".to_owned()));
}

#[tokio::test]
async fn tools_are_listed_with_input_and_output_schemas() {
    let client = common::spawn().await;
    let tools = client.list_all_tools().await.unwrap();
    for name in ["fault_list_function_names", "fault_extract_code_block"] {
        let tool = tools.iter().find(|t| t.name == name).expect(name);
        assert!(tool.output_schema.is_some(), "{name} has an outputSchema");
        assert!(
            tool.description
                .as_deref()
                .unwrap_or_default()
                .contains("absolute path")
        );
        let required = tool.input_schema.get("required").unwrap();
        assert!(required.as_array().unwrap().contains(&json!("file")));
    }
    client.cancel().await.unwrap();
}

/// The language lists in the tool descriptions come from the registry: every registered language is named
/// in each, and every extension where a file is asked for.
#[tokio::test]
async fn every_registered_language_is_named_in_every_tool_description_that_lists_languages() {
    let client = common::spawn().await;
    let tools = client.list_all_tools().await.unwrap();
    let tool = |name: &str| tools.iter().find(|t| t.name == name).expect(name);
    let field = |name: &str, field: &str| {
        let description = &tool(name).input_schema["properties"][field]["description"];
        description.as_str().unwrap_or_default().to_owned()
    };
    let names_every_language = |place: String, text: String| {
        let words: HashSet<String> = text
            .split(|c: char| !c.is_alphanumeric())
            .map(str::to_lowercase)
            .collect();
        for language in Language::all() {
            assert!(
                words.contains(language.name()),
                "{place} does not name {language}: {text}"
            );
        }
    };
    let lists_every_extension = |place: String, text: String| {
        let listed: HashSet<&str> = text
            .split(|c: char| !(c.is_alphanumeric() || c == '.'))
            .map(|word| word.trim_end_matches('.'))
            .collect();
        for extension in Language::supported_extensions().split(", ") {
            assert!(
                listed.contains(extension),
                "{place} does not list {extension}: {text}"
            );
        }
    };
    for name in [
        "fault_list_function_names",
        "fault_extract_code_block",
        "fault_suggest_better_function_performance",
        "fault_suggest_better_function_reliability",
    ] {
        let description = tool(name).description.as_deref().unwrap_or_default();
        names_every_language(format!("{name}'s description"), description.to_owned());
    }
    for name in [
        "fault_index_source_code",
        "fault_score_performance",
        "fault_score_reliability",
        "fault_suggest_better_function_performance",
        "fault_suggest_better_function_reliability",
        "fault_suggest_service_level_objectives_slo",
    ] {
        names_every_language(format!("{name}'s lang"), field(name, "lang"));
    }
    for name in [
        "fault_list_function_names",
        "fault_extract_code_block",
        "fault_function_reliability_deep_analysis",
    ] {
        lists_every_extension(format!("{name}'s file"), field(name, "file"));
    }
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn list_gives_names_once_in_document_order_and_structured_details() {
    let client = common::spawn().await;

    let (names, structured) = list(&client, &common::code_fixture("sample.py")).await;
    assert_eq!(
        names,
        [
            "plain",
            "fetch",
            "cached",
            "__init__",
            "label",
            "run",
            "helper",
            "ahelper",
            "deep",
            "conditional"
        ]
    );
    let functions = structured["functions"].as_array().unwrap();
    assert_eq!(functions.len(), 11, "plain is defined twice");
    assert_eq!(
        functions[5],
        json!({"name": "run", "qualified_name": "Service.run", "kind": "method", "start_line": 32, "end_line": 39})
    );
    assert_eq!(functions[6]["qualified_name"], "Service.run.helper");
    assert_eq!(functions[6]["kind"], "function");

    let (names, structured) = list(&client, &common::code_fixture("sample.go")).await;
    assert_eq!(
        names,
        ["Add", "String", "Move", "Push", "Len", "cpuid", "main"]
    );
    assert_eq!(structured["functions"][3]["qualified_name"], "Stack.Push");
    assert_eq!(structured["functions"][5]["kind"], "signature");

    let (names, structured) = list(&client, &common::code_fixture("sample.rs")).await;
    assert_eq!(
        names,
        [
            "add", "fetch", "nested", "new", "x", "fmt", "area", "describe", "abs", "adds"
        ]
    );
    let by_name = |name: &str| {
        structured["functions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["name"] == name)
            .unwrap()
            .clone()
    };
    assert_eq!(by_name("new")["qualified_name"], "Point::new");
    assert_eq!(by_name("area")["kind"], "signature");
    assert_eq!(by_name("describe")["qualified_name"], "Shape::describe");
    assert_eq!(by_name("describe")["kind"], "method");
    assert_eq!(
        by_name("add")["start_line"],
        6,
        "doc comments and attributes belong to the definition"
    );

    let (names, structured) = list(&client, &common::code_fixture("sample.js")).await;
    assert_eq!(
        names,
        [
            "plain",
            "fetchIt",
            "counter",
            "exported",
            "arrow",
            "asyncArrow",
            "expr",
            "gen",
            "late",
            "create",
            "constructor",
            "label",
            "stream",
            "#hidden",
            "onClick",
            "helper",
            "other",
            "speak",
            "get",
            "post",
            "del",
            "quoted-key"
        ]
    );
    let functions = structured["functions"].as_array().unwrap();
    let qualified: Vec<&str> = functions
        .iter()
        .map(|f| f["qualified_name"].as_str().unwrap())
        .collect();
    for expected in [
        "Animal.create",
        "exports.helper",
        "module.exports.other",
        "Animal.speak",
        "api.get",
        "api.post",
    ] {
        assert!(qualified.contains(&expected), "{expected} in {qualified:?}");
    }
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn extract_returns_full_and_body_exactly() {
    let client = common::spawn().await;
    let python = common::code_fixture("sample.py");

    let (text_value, structured) = extract(&client, &python, "cached").await;
    let keys: Vec<&String> = text_value.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["full", "body"], "the text is exactly {{full, body}}");
    assert_eq!(
        text_value["full"],
        "@functools.lru_cache(maxsize=None)\n@staticmethod\ndef cached(n):\n    return n"
    );
    assert_eq!(text_value["body"], "return n");
    assert_eq!(structured["function"]["start_line"], 16);
    assert_eq!(structured["other_matches"], 0);

    // Qualified names pick among several definitions; `.` and `::` both work.
    let (text_value, structured) = extract(&client, &python, "Service.run.helper").await;
    assert_eq!(
        text_value["full"],
        "def helper(x):\n            return x * 2"
    );
    assert_eq!(
        structured["function"]["qualified_name"],
        "Service.run.helper"
    );
    let (text_value, _) = extract(&client, &python, "Service.label").await;
    assert!(
        text_value["full"]
            .as_str()
            .unwrap()
            .starts_with("@property\n    def label")
    );

    let rust = common::code_fixture("sample.rs");
    let (text_value, structured) = extract(&client, &rust, "Point::x").await;
    assert_eq!(
        text_value["full"],
        "fn x(&self) -> T {\n        self.x\n    }"
    );
    assert_eq!(text_value["body"], "{\n        self.x\n    }");
    assert_eq!(structured["function"]["kind"], "method");
    let (text_value, _) = extract(&client, &rust, "add").await;
    assert!(
        text_value["full"]
            .as_str()
            .unwrap()
            .starts_with("/// Adds.\n#[inline]\n#[must_use]\npub fn add")
    );
    let (text_value, structured) = extract(&client, &rust, "Shape::area").await;
    assert_eq!(text_value["full"], "fn area(&self) -> f64;");
    assert_eq!(text_value["body"], "");
    assert_eq!(structured["function"]["kind"], "signature");
    // A plain name prefers a definition with a body over the trait's declaration.
    let (text_value, structured) = extract(&client, &rust, "area").await;
    assert_eq!(
        text_value["full"],
        "/// The area of a point.\n    // (always zero)\n    fn area(&self) -> f64 {\n        0.0\n    }"
    );
    assert_eq!(structured["function"]["qualified_name"], "Point::area");
    assert_eq!(structured["other_matches"], 1);

    let go = common::code_fixture("sample.go");
    let (text_value, _) = extract(&client, &go, "Point.Move").await;
    assert!(
        text_value["full"].as_str().unwrap().starts_with(
            "// Move moves the point\n// by dx and dy.\n//\n//go:noinline\nfunc (p *Point) Move(dx, dy int) {"
        ),
        "the doc comment group, not the trailing comment above it"
    );
    assert_eq!(text_value["body"], "{\n\tp.X += dx\n\tp.Y += dy\n}");
    let (text_value, _) = extract(&client, &go, "Add").await;
    assert!(
        text_value["full"]
            .as_str()
            .unwrap()
            .starts_with("func Add(a, b int)"),
        "a comment separated by a blank line is not a doc comment"
    );

    let js = common::code_fixture("sample.js");
    let (text_value, _) = extract(&client, &js, "arrow").await;
    assert_eq!(text_value["full"], "const arrow = (x) => x * 2;");
    assert_eq!(text_value["body"], "x * 2");
    let (text_value, _) = extract(&client, &js, "Animal.speak").await;
    assert!(
        text_value["full"]
            .as_str()
            .unwrap()
            .starts_with("Animal.prototype.speak = function")
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn ambiguous_plain_name_returns_the_first_and_says_how_many_others() {
    let client = common::spawn().await;
    let (text_value, structured) =
        extract(&client, &common::code_fixture("sample.py"), "plain").await;
    assert!(text_value["full"].as_str().unwrap().contains("Adds."));
    assert_eq!(structured["function"]["start_line"], 7);
    assert_eq!(structured["function"]["end_line"], 9);
    assert_eq!(structured["other_matches"], 1);

    let (_, structured) = extract(&client, &common::code_fixture("sample.js"), "label").await;
    assert_eq!(
        structured["function"]["start_line"], 38,
        "the getter comes first"
    );
    assert_eq!(structured["other_matches"], 1);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn file_uris_are_accepted() {
    let client = common::spawn().await;
    let uri = format!("file://{}", common::code_fixture("sample.go"));
    let (names, _) = list(&client, &uri).await;
    assert_eq!(names[0], "Add");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn every_bad_input_is_a_tool_error_and_the_server_keeps_serving() {
    let client = common::spawn().await;
    let dir = tempfile::tempdir().unwrap();
    let at = |name: &str| dir.path().join(name).to_string_lossy().into_owned();

    let binary = at("blob.py");
    std::fs::write(&binary, b"def f():\n    return b'\x00\x01'\0\n").unwrap();
    let latin1 = at("latin1.py");
    std::fs::write(&latin1, b"# caf\xe9\ndef f():\n    pass\n").unwrap();
    let huge = at("huge.py");
    // Sparse: the size check happens before anything is read.
    std::fs::File::create(&huge)
        .unwrap()
        .set_len(fault::code::MAX_SOURCE_BYTES + 1)
        .unwrap();
    let unsupported = at("notes.txt");
    std::fs::File::create(&unsupported)
        .unwrap()
        .write_all(b"hello")
        .unwrap();
    let no_extension = at("Makefile");
    std::fs::write(&no_extension, "all:\n").unwrap();

    let list_tool = "fault_list_function_names";
    let cases: Vec<(&str, Value, Vec<&str>)> = vec![
        (
            list_tool,
            json!({"file": at("missing.py")}),
            vec!["file not found", "missing.py"],
        ),
        (
            list_tool,
            json!({"file": dir.path()}),
            vec!["is a directory"],
        ),
        (
            list_tool,
            json!({"file": "src/app.py"}),
            vec!["relative path", "absolute path"],
        ),
        (
            list_tool,
            json!({"file": ""}),
            vec!["empty", "absolute path"],
        ),
        (
            list_tool,
            json!({"file": unsupported}),
            vec![
                "unsupported file type '.txt'",
                ".py",
                ".go",
                ".rs",
                ".js",
                ".jsx",
            ],
        ),
        (
            list_tool,
            json!({"file": no_extension}),
            vec!["(no extension)", ".py"],
        ),
        (list_tool, json!({"file": binary}), vec!["binary"]),
        (
            list_tool,
            json!({"file": latin1}),
            vec!["not valid UTF-8", "line 1", "re-encode"],
        ),
        (
            list_tool,
            json!({"file": huge}),
            vec!["10485761 bytes", "10 MiB"],
        ),
        (
            list_tool,
            json!({"file": "file://other-host/x.py"}),
            vec!["file:// URI"],
        ),
        (
            "fault_extract_code_block",
            json!({"file": common::code_fixture("sample.py"), "func": "plian"}),
            vec![
                "'plian' not found",
                "closest names: plain",
                "fault_list_function_names",
            ],
        ),
        (
            "fault_extract_code_block",
            json!({"file": common::code_fixture("sample.py"), "func": "Service.rnu"}),
            vec!["closest names: Service.run"],
        ),
        (
            "fault_extract_code_block",
            json!({"file": common::code_fixture("sample.rs"), "func": "  "}),
            vec!["function name is empty"],
        ),
        (
            "fault_extract_code_block",
            json!({"file": at("missing.rs"), "func": "main"}),
            vec!["file not found"],
        ),
    ];
    for (tool, args, needles) in cases {
        assert_tool_error_then_recovers(&client, tool, args, &needles).await;
    }
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn unknown_tool_is_a_protocol_error_and_malformed_arguments_are_rejected() {
    let client = common::spawn().await;
    let unknown = call(&client, "fault_no_such_tool", json!({})).await;
    assert!(unknown.is_err(), "unknown tool: {unknown:?}");
    let (names, _) = list(&client, &common::code_fixture("sample.rs")).await;
    assert!(!names.is_empty());

    // rmcp reports arguments that do not match the input schema as a tool error naming the field
    // (as the current MCP spec asks, so that a model can correct itself); a protocol error is fine too.
    for (tool, bad, field) in [
        ("fault_list_function_names", json!({}), "file"),
        ("fault_list_function_names", json!({"file": 42}), "string"),
        (
            "fault_list_function_names",
            json!({"path": "/x.py"}),
            "file",
        ),
        (
            "fault_extract_code_block",
            json!({"file": common::code_fixture("sample.py")}),
            "func",
        ),
    ] {
        match call(&client, tool, bad.clone()).await {
            Err(_) => {}
            Ok(result) => {
                assert!(is_error(&result), "malformed {bad} accepted");
                assert!(text(&result).contains(field), "{bad}: {}", text(&result));
            }
        }
        let (names, _) = list(&client, &common::code_fixture("sample.go")).await;
        assert!(!names.is_empty());
    }
    let (text_value, _) = extract(&client, &common::code_fixture("sample.py"), "fetch").await;
    assert!(
        text_value["full"]
            .as_str()
            .unwrap()
            .starts_with("async def fetch")
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_file_without_functions_and_a_file_with_syntax_errors() {
    let client = common::spawn().await;
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.py");
    std::fs::write(&empty, "X = 1\n").unwrap();
    let empty = empty.to_string_lossy().into_owned();
    let (names, structured) = list(&client, &empty).await;
    assert!(names.is_empty());
    assert_eq!(structured, json!({"functions": []}));
    let result = call(
        &client,
        "fault_extract_code_block",
        json!({"file": empty, "func": "f"}),
    )
    .await
    .unwrap();
    assert!(is_error(&result));
    assert!(text(&result).contains("the file has no functions"));

    // Broken code still lists what can be recognised.
    let broken = dir.path().join("broken.js");
    std::fs::write(&broken, "function ok() { return 1; }\nfunction broken( {\n").unwrap();
    let (names, _) = list(&client, &broken.to_string_lossy()).await;
    assert_eq!(names[0], "ok");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn typescript_and_tsx_are_listed_and_extracted() {
    let client = common::spawn().await;
    let ts = common::code_fixture("sample.ts");
    let (names, structured) = list(&client, &ts).await;
    assert_eq!(
        names,
        [
            "parse",
            "external",
            "double",
            "area",
            "describe",
            "onResize",
            "constructor",
            "load",
            "distance",
            "onOpen",
            "onClose",
            "logged"
        ]
    );
    let functions = structured["functions"].as_array().unwrap();
    let summary: Vec<(&str, &str)> = functions
        .iter()
        .map(|f| {
            (
                f["qualified_name"].as_str().unwrap(),
                f["kind"].as_str().unwrap(),
            )
        })
        .collect();
    for expected in [
        ("parse", "signature"),
        ("parse", "function"),
        ("external", "signature"),
        ("Shape.area", "signature"),
        ("Shape.describe", "method"),
        ("Square.onResize", "method"),
        ("Square.area", "method"),
        ("Square.load", "method"),
        ("Geometry.distance", "function"),
        ("handlers.onOpen", "method"),
        ("handlers.onClose", "method"),
    ] {
        assert!(summary.contains(&expected), "{expected:?} in {summary:?}");
    }

    // The implementation, not an overload signature; a decorator belongs to its method.
    let (text_value, structured) = extract(&client, &ts, "parse").await;
    assert_eq!(
        text_value["full"],
        "export function parse(input: string | number): number {\n  return Number(input);\n}"
    );
    assert_eq!(structured["other_matches"], 2);
    let (text_value, structured) = extract(&client, &ts, "area").await;
    assert_eq!(
        text_value["full"],
        "@logged\n  area(): number {\n    return this.size * this.size;\n  }"
    );
    assert_eq!(structured["function"]["qualified_name"], "Square.area");
    let (text_value, _) = extract(&client, &ts, "Shape.area").await;
    assert_eq!(text_value["full"], "abstract area(): number;");
    assert_eq!(text_value["body"], "");

    let (names, _) = list(&client, &common::code_fixture("sample.tsx")).await;
    assert_eq!(names, ["Greeting", "Counter"]);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_changed_file_gives_the_new_answer() {
    let client = common::spawn().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("module.py");
    let file = path.to_string_lossy().into_owned();
    std::fs::write(&path, "def first():\n    return 1\n").unwrap();
    assert_eq!(list(&client, &file).await.0, ["first"]);
    assert_eq!(list(&client, &file).await.0, ["first"]);
    // Same size, rewritten in place right away.
    std::fs::write(&path, "def other():\n    return 2\n").unwrap();
    assert_eq!(list(&client, &file).await.0, ["other"]);
    let (text_value, _) = extract(&client, &file, "other").await;
    assert_eq!(text_value["full"], "def other():\n    return 2");
    std::fs::write(
        &path,
        "def other():\n    return 2\n\ndef added():\n    pass\n",
    )
    .unwrap();
    assert_eq!(list(&client, &file).await.0, ["other", "added"]);
    client.cancel().await.unwrap();
}

/// A definition with a body wins over a body-less one also when the body-less one is at the top level and the
/// one with a body is a method of the same plain name (Go's `reflect/value.go` `call`, a TypeScript `declare`d
/// function beside a class method); the other is counted in `other_matches`.
#[tokio::test]
async fn a_method_with_a_body_wins_over_a_top_level_signature_of_the_same_name() {
    let client = common::spawn().await;
    let dir = tempfile::tempdir().unwrap();
    let go = dir.path().join("value.go");
    std::fs::write(
        &go,
        "package reflect\n\n// call is implemented in assembly.\n\
         func call(argtype *abi.Type, fn, arg unsafe.Pointer, n uint32, retoffset uint32)\n\n\
         type Value struct{}\n\n\
         func (v Value) call(op string, in []Value) []Value {\n\treturn nil\n}\n",
    )
    .unwrap();
    let go = go.to_string_lossy().into_owned();
    let (text_value, structured) = extract(&client, &go, "call").await;
    assert_eq!(structured["function"]["qualified_name"], "Value.call");
    assert_eq!(structured["other_matches"], 1);
    assert_eq!(
        text_value["full"],
        "func (v Value) call(op string, in []Value) []Value {\n\treturn nil\n}"
    );
    // Asked for by its qualified name, the method is the only match.
    let (_, structured) = extract(&client, &go, "Value.call").await;
    assert_eq!(structured["other_matches"], 0);

    let ts = dir.path().join("run.ts");
    std::fs::write(
        &ts,
        "declare function run(): void;\n\nclass A {\n  run() {\n    return 1;\n  }\n}\n",
    )
    .unwrap();
    let ts = ts.to_string_lossy().into_owned();
    let (text_value, structured) = extract(&client, &ts, "run").await;
    assert_eq!(structured["function"]["qualified_name"], "A.run");
    assert_eq!(structured["other_matches"], 1);
    assert_eq!(text_value["body"], "{\n    return 1;\n  }");

    // With no body anywhere, the signature is what there is.
    std::fs::write(
        dir.path().join("only.ts"),
        "declare function run(): void;\n",
    )
    .unwrap();
    let only = dir.path().join("only.ts").to_string_lossy().into_owned();
    let (_, structured) = extract(&client, &only, "run").await;
    assert_eq!(structured["function"]["kind"], "signature");
    assert_eq!(structured["other_matches"], 0);
    client.cancel().await.unwrap();
}

/// A chain of assignments ending in a function defines every name it assigns (express's
/// `res.contentType = res.type = function contentType(type) {…}`), each spanning the whole statement.
#[tokio::test]
async fn chained_assignments_define_each_name() {
    let client = common::spawn().await;
    let dir = tempfile::tempdir().unwrap();
    let source = "res.contentType = res.type = function contentType(type) {\n  return type;\n};\n\n\
                  base.Program = base.BlockStatement = base.StaticBlock = function (node, st, c) {\n  c(node);\n};\n\n\
                  first = second = () => 1;\n\n\
                  a.x = a.y = function () {\n  function inner() {}\n};\n";
    for extension in ["js", "ts"] {
        let path = dir.path().join(format!("chain.{extension}"));
        std::fs::write(&path, source).unwrap();
        let file = path.to_string_lossy().into_owned();
        let (names, structured) = list(&client, &file).await;
        assert_eq!(
            names,
            [
                "contentType",
                "type",
                "Program",
                "BlockStatement",
                "StaticBlock",
                "first",
                "second",
                "x",
                "y",
                "inner"
            ],
            "{extension}"
        );
        let qualified: Vec<&str> = structured["functions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["qualified_name"].as_str().unwrap())
            .collect();
        assert_eq!(
            qualified,
            [
                "res.contentType",
                "res.type",
                "base.Program",
                "base.BlockStatement",
                "base.StaticBlock",
                "first",
                "second",
                "a.x",
                "a.y",
                "x.inner"
            ],
            "a function nested in a chain's is qualified by its first name"
        );
        let (text_value, structured) = extract(&client, &file, "type").await;
        assert_eq!(
            text_value["full"],
            "res.contentType = res.type = function contentType(type) {\n  return type;\n};"
        );
        assert_eq!(text_value["body"], "{\n  return type;\n}");
        assert_eq!(structured["function"]["kind"], "function");
        assert_eq!(
            (
                &structured["function"]["start_line"],
                &structured["function"]["end_line"]
            ),
            (&json!(1), &json!(3))
        );
        let (_, structured) = extract(&client, &file, "BlockStatement").await;
        assert_eq!(structured["function"]["start_line"], 5);
    }
    client.cancel().await.unwrap();
}
