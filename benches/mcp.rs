//! MCP round-trip benchmark of the code tools, each figure next to a peer measured in the same run.
//!
//! `cargo bench --bench mcp` (release build). Measures, as medians over repeated runs:
//! - spawn of `fault agent tool` → `initialize` answer, vs. starting `python3 -c pass`;
//! - `tools/list` round trip, and a call refused for a misspelled field (at the top and nested), beside it;
//! - `fault_list_function_names` (first call) on a generated 10,000-line Python file, vs. a python3 process
//!   listing it with `ast` (and vs. `ast.parse` alone, timed inside Python);
//! - the same on a generated 10,000-line Rust file, vs. `syn::parse_file` + a visitor in this process;
//! - `fault_extract_code_block` of one function of each file (after a listing: the parse is cached);
//! - the first and the repeated `fault_list_function_names` of each 10,000-line file, beside a bare tree-sitter
//!   parse of the same source in this process (parser setup and parse; freeing the tree not counted), in
//!   interleaved rounds: each round parses in process, lists a
//!   fresh copy of the file (first call: read, parse, queries, answer), then lists that copy again (repeated
//!   call: served by the parse cache); each also as CPU time (the server process's, every thread; the parsing
//!   thread's for the bare parse), readable on a loaded machine, and the repeated call beside its floor: encoding
//!   and decoding the same JSON-RPC answer in this process;
//! - the same for a 14,000-line TSX file (one large class, as excalidraw's `App.tsx`; `FAULT_BENCH_TSX=<file>`
//!   lists a real one instead) and a 10,000-line TypeScript file, plus the first listing in a fresh server (the
//!   grammar's queries compiled then), beside the TypeScript compiler in node (`createSourceFile` + a walk for
//!   the function-like declarations: its first run in a fresh node process, and warm, in process). The compiler
//!   is installed with npm into `$FAULT_BENCH_CACHE` (default `~/.cache/fault-bench`), outside the repository;
//!   without node or npm that peer is skipped, saying so.

use std::{
    path::Path,
    process::Command,
    time::{Duration, Instant},
};

#[path = "support/mcp_stdio.rs"]
mod mcp_stdio;

use mcp_stdio::Server;
use serde_json::{Value, json};
use syn::visit::Visit;

const RUNS: usize = 21;

/// Interleaved rounds: bare tree-sitter parse, first MCP listing of a fresh copy, repeated listing; wall times as
/// medians, CPU times as means over the rounds (the server's counters tick every 10 ms).
struct FirstAndRepeated {
    bare_parse: Duration,
    first_call: Duration,
    repeated_call: Duration,
    /// CPU time of the thread that parsed (this one).
    bare_parse_cpu: Duration,
    /// CPU time of the whole server process (every thread) across one call.
    first_call_cpu: Duration,
    repeated_call_cpu: Duration,
    /// Floor of a repeated call: encoding the same JSON-RPC answer and decoding it again, in this process.
    encode_decode: Duration,
    encode_decode_cpu: Duration,
}

/// CPU time this thread has run (`sum_exec_runtime`, nanoseconds).
fn thread_cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
    let nanos = stat.split_whitespace().next().and_then(|n| n.parse().ok());
    Duration::from_nanos(nanos.unwrap_or(0))
}

/// User + system CPU time of process `pid`, threads that have exited included (10 ms ticks: USER_HZ is 100).
fn process_cpu(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which may hold spaces): state is field 3, utime 14, stime 15.
    let after_name = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let ticks: u64 = after_name
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|t| t.parse::<u64>().ok())
        .sum();
    Duration::from_millis(ticks * 10)
}

fn first_and_repeated(
    server: &mut Server,
    dir: &Path,
    extension: &str,
    source: &str,
    grammar: tree_sitter::Language,
    runs: usize,
) -> FirstAndRepeated {
    let (mut bare, mut first, mut repeated, mut codec) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut bare_cpu, mut first_cpu, mut repeated_cpu, mut codec_cpu) = (
        Duration::ZERO,
        Duration::ZERO,
        Duration::ZERO,
        Duration::ZERO,
    );
    let pid = server.pid();
    for round in 0..runs {
        let copy = dir.join(format!("fresh-{round}.{extension}"));
        std::fs::write(&copy, source).unwrap();
        let file = json!({"file": copy.to_string_lossy()});

        let (start, cpu) = (Instant::now(), thread_cpu());
        let mut parser = tree_sitter::Parser::new();
        parser.set_language(&grammar).unwrap();
        let tree = std::hint::black_box(parser.parse(source, None).unwrap());
        bare.push(start.elapsed());
        bare_cpu += thread_cpu() - cpu;
        // Freeing the tree is not part of the floor (the server frees a large tree off the answer's path).
        drop(tree);

        let (start, cpu) = (Instant::now(), process_cpu(pid));
        let answer = server.call("fault_list_function_names", file.clone());
        first.push(start.elapsed());
        first_cpu += process_cpu(pid) - cpu;
        assert!(answer["result"]["isError"] != true, "{answer}");

        let (start, cpu) = (Instant::now(), process_cpu(pid));
        let answer = std::hint::black_box(server.call("fault_list_function_names", file));
        repeated.push(start.elapsed());
        repeated_cpu += process_cpu(pid) - cpu;

        let (start, cpu) = (Instant::now(), thread_cpu());
        let line = serde_json::to_string(&answer).unwrap();
        std::hint::black_box(serde_json::from_str::<Value>(&line).unwrap());
        codec.push(start.elapsed());
        codec_cpu += thread_cpu() - cpu;
    }
    let mean = |total: Duration| total / runs as u32;
    FirstAndRepeated {
        bare_parse: median(bare),
        first_call: median(first),
        repeated_call: median(repeated),
        bare_parse_cpu: mean(bare_cpu),
        first_call_cpu: mean(first_cpu),
        repeated_call_cpu: mean(repeated_cpu),
        encode_decode: median(codec),
        encode_decode_cpu: mean(codec_cpu),
    }
}

/// A fresh server for each round: the first listing of the file (its grammar's queries compiled then) beside a
/// bare parse in process; medians.
fn first_listing_in_a_fresh_server(
    dir: &Path,
    extension: &str,
    source: &str,
    grammar: tree_sitter::Language,
    runs: usize,
) -> (Duration, Duration) {
    let (mut first, mut bare) = (Vec::new(), Vec::new());
    for round in 0..runs {
        let copy = dir.join(format!("cold-{round}.{extension}"));
        std::fs::write(&copy, source).unwrap();
        let mut server = Server::spawn();
        server.initialize();
        let start = Instant::now();
        let mut parser = tree_sitter::Parser::new();
        parser.set_language(&grammar).unwrap();
        let tree = std::hint::black_box(parser.parse(source, None).unwrap());
        bare.push(start.elapsed());
        drop(tree);
        let start = Instant::now();
        let answer = server.call(
            "fault_list_function_names",
            json!({"file": copy.to_string_lossy()}),
        );
        first.push(start.elapsed());
        assert!(answer["result"]["isError"] != true, "{answer}");
        server.close();
    }
    (median(first), median(bare))
}

/// The TypeScript compiler's figures for one file: functions found, its first run in a fresh node process
/// (module load, parse and walk, the whole process), its first parse and walk in that process, and the median
/// of the later ones (warm).
struct TypeScriptPeer {
    count: usize,
    process: Duration,
    first_in_process: Duration,
    warm: Duration,
}

/// Parses a file with the TypeScript compiler and walks it for function-like declarations with a name, `runs`
/// times in one process; prints `{count, first_ms, warm_ms}`.
const TYPESCRIPT_LISTING: &str = r#"
const fs = require("fs");
const ts = require("typescript");
const [file, runs] = [process.argv[2], Number(process.argv[3])];
const kind = file.endsWith(".tsx") ? ts.ScriptKind.TSX : ts.ScriptKind.TS;
const isFunction = (n) => n && (ts.isFunctionExpression(n) || ts.isArrowFunction(n));
function list(text) {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false, kind);
  const names = [];
  const visit = (node) => {
    if (
      ts.isFunctionDeclaration(node) || ts.isMethodDeclaration(node) || ts.isConstructorDeclaration(node) ||
      ts.isGetAccessorDeclaration(node) || ts.isSetAccessorDeclaration(node) ||
      ((ts.isVariableDeclaration(node) || ts.isPropertyDeclaration(node) || ts.isPropertyAssignment(node)) &&
        isFunction(node.initializer))
    ) {
      names.push(node.name ? node.name.getText(source) : "constructor");
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return names;
}
const text = fs.readFileSync(file, "utf8");
const times = [];
let count = 0;
for (let i = 0; i < runs; i++) {
  const start = process.hrtime.bigint();
  count = list(text).length;
  times.push(Number(process.hrtime.bigint() - start) / 1e6);
}
const warm = times.slice(1).sort((a, b) => a - b);
console.log(JSON.stringify({ count, first_ms: times[0], warm_ms: warm[Math.floor(warm.length / 2)] }));
"#;

/// The directory holding `node_modules/typescript`, installed there with npm if needed; `Err` says why not.
fn typescript_modules() -> Result<std::path::PathBuf, String> {
    let cache = std::env::var_os("FAULT_BENCH_CACHE")
        .map(std::path::PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .map(|home| std::path::PathBuf::from(home).join(".cache/fault-bench"))
        })
        .ok_or("no FAULT_BENCH_CACHE or HOME for the npm cache")?;
    let modules = cache.join("node_modules");
    if modules.join("typescript/package.json").is_file() {
        return Ok(modules);
    }
    std::fs::create_dir_all(&cache)
        .map_err(|e| format!("cannot create {}: {e}", cache.display()))?;
    let installed = Command::new("npm")
        .args(["install", "--no-audit", "--no-fund", "--silent", "--prefix"])
        .arg(&cache)
        .arg("typescript@5.9.3")
        .status();
    match installed {
        Ok(status) if status.success() => Ok(modules),
        Ok(status) => Err(format!(
            "npm install typescript into {} failed ({status})",
            cache.display()
        )),
        Err(e) => Err(format!("npm not found ({e})")),
    }
}

/// The TypeScript compiler's figures for `file` (median of `runs` fresh node processes), or why there are none.
fn typescript_peer(dir: &Path, file: &Path, runs: usize) -> Result<TypeScriptPeer, String> {
    Command::new("node")
        .arg("--version")
        .output()
        .map_err(|e| format!("node not found ({e})"))?;
    let modules = typescript_modules()?;
    let script = dir.join("typescript_listing.cjs");
    std::fs::write(&script, TYPESCRIPT_LISTING).map_err(|e| e.to_string())?;
    let (mut process, mut first, mut warm, mut count) = (Vec::new(), Vec::new(), Vec::new(), 0);
    for _ in 0..runs {
        let start = Instant::now();
        let output = Command::new("node")
            .env("NODE_PATH", &modules)
            .arg(&script)
            .arg(file)
            .arg("11")
            .output()
            .map_err(|e| e.to_string())?;
        process.push(start.elapsed());
        let answer: Value = serde_json::from_slice(&output.stdout).map_err(|e| {
            format!(
                "the TypeScript listing did not answer JSON ({e}): {}",
                String::from_utf8_lossy(&output.stderr)
            )
        })?;
        count = answer["count"].as_u64().unwrap_or(0) as usize;
        let millis =
            |key: &str| Duration::from_secs_f64(answer[key].as_f64().unwrap_or(0.0) / 1000.0);
        first.push(millis("first_ms"));
        warm.push(millis("warm_ms"));
    }
    Ok(TypeScriptPeer {
        count,
        process: median(process),
        first_in_process: median(first),
        warm: median(warm),
    })
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn time<T>(runs: usize, mut f: impl FnMut() -> T) -> Duration {
    median(
        (0..runs)
            .map(|_| {
                let start = Instant::now();
                std::hint::black_box(f());
                start.elapsed()
            })
            .collect(),
    )
}

/// A Python module of `lines` lines: classes with decorated methods, nested functions, free functions.
fn python_source(lines: usize) -> String {
    let mut out = String::from("import functools\n\n\n");
    let mut i = 0;
    while out.lines().count() < lines - 30 {
        out.push_str(&format!(
            "class Service{i}:\n    rate = {i}\n\n    def __init__(self, name):\n        self.name = name\n\n    \
             @property\n    def label(self):\n        return self.name.upper()\n\n    async def run(self, n):\n        \
             def helper(x):\n            return x * 2\n        return helper(n) + {i}\n\n\n\
             @functools.lru_cache(maxsize=None)\ndef compute_{i}(a, b=1):\n    total = 0\n    for k in range(a):\n        \
             total += k * b\n    return total\n\n\n"
        ));
        i += 1;
    }
    while out.lines().count() < lines - 2 {
        out.push_str("# padding\n");
    }
    out.push_str("def target_function(x):\n    return x + 1\n");
    out
}

/// A TSX file of `lines` lines shaped like excalidraw's `App.tsx`: imports and types, then one class holding
/// nearly all of it (arrow-function fields, methods rendering JSX with callbacks, getters, private methods),
/// then a few exported functions. No top-level line past the middle to cut at: it is parsed whole.
fn tsx_source(lines: usize) -> String {
    let mut out = String::from(
        "import React from \"react\";\nimport { Item } from \"./item\";\n\n\
         type Props = { items: { id: string; label: string }[] };\ntype State = { at: number; open: boolean };\n\n\
         class App extends React.Component<Props, State> {\n  state: State = { at: 0, open: false };\n\n",
    );
    let mut i = 0;
    while out.lines().count() < lines - 20 {
        out.push_str(&format!(
            "  private onPointerDown{i} = (event: React.PointerEvent<HTMLDivElement>) => {{\n    \
             const next = {{ ...this.state, at: {i} }};\n    if (event.button !== 0) {{\n      return;\n    }}\n    \
             this.setState(next);\n  }};\n\n  /** The panel of step {i}. */\n  public renderPanel{i}(): JSX.Element {{\n    \
             const items = this.props.items.filter((item) => item.label.length > {i});\n    return (\n      \
             <div className=\"panel\" onPointerDown={{this.onPointerDown{i}}}>\n        {{items.map((item) => (\n          \
             <Item key={{item.id}} label={{item.label}} onSelect={{() => this.setState({{ open: true }})}} />\n        \
             ))}}\n      </div>\n    );\n  }}\n\n  get width{i}(): number {{\n    return this.state.at * {i};\n  }}\n\n  \
             private async load{i}(url: string): Promise<void> {{\n    const response = await fetch(url);\n    \
             const body = await response.json();\n    this.setState({{ at: body.at ?? {i} }});\n  }}\n\n"
        ));
        i += 1;
    }
    out.push_str(
        "  render() {\n    return <div>{this.renderPanel0()}</div>;\n  }\n}\n\n\
         export const mount = (root: HTMLElement) => root;\n\nexport default App;\n",
    );
    out
}

/// A TypeScript file of `lines` lines: interfaces, classes with overloads and abstract methods, free and arrow
/// functions, a namespace.
fn typescript_source(lines: usize) -> String {
    let mut out = String::from("import { EventEmitter } from \"events\";\n\n");
    let mut i = 0;
    while out.lines().count() < lines - 10 {
        out.push_str(&format!(
            "export interface Shape{i} {{\n  area(): number;\n  name: string;\n}}\n\n\
             export abstract class Base{i} extends EventEmitter implements Shape{i} {{\n  name = \"base{i}\";\n\n  \
             abstract area(): number;\n\n  scale(by: number): number;\n  scale(by: string): number;\n  \
             scale(by: number | string): number {{\n    return this.area() * Number(by);\n  }}\n\n  \
             protected emitChange = (value: number): void => {{\n    this.emit(\"change\", value + {i});\n  }};\n}}\n\n\
             export function compute{i}<T extends number>(values: T[], bias = {i}): number {{\n  \
             const total = values.reduce((sum, value) => sum + value, bias);\n  return total / values.length;\n}}\n\n\
             export const format{i} = (value: number): string => `${{value.toFixed(2)}} ({i})`;\n\n\
             export namespace Geometry{i} {{\n  export function distance(a: number, b: number): number {{\n    \
             return Math.abs(a - b);\n  }}\n}}\n\n"
        ));
        i += 1;
    }
    out
}

/// A Rust file of `lines` lines: structs with impl blocks, traits with default methods, free functions.
fn rust_source(lines: usize) -> String {
    let mut out = String::from("use std::fmt;\n\n");
    let mut i = 0;
    while out.lines().count() < lines - 40 {
        out.push_str(&format!(
            "pub struct Point{i} {{\n    x: i64,\n}}\n\nimpl Point{i} {{\n    pub fn new(x: i64) -> Self {{\n        \
             Self {{ x }}\n    }}\n\n    #[inline]\n    pub fn x(&self) -> i64 {{\n        self.x + {i}\n    }}\n}}\n\n\
             pub trait Shape{i} {{\n    fn area(&self) -> f64;\n\n    fn describe(&self) -> String {{\n        \
             format!(\"area {{}}\", self.area())\n    }}\n}}\n\n#[must_use]\npub fn compute_{i}(a: i64) -> i64 {{\n    \
             fn inner(v: i64) -> i64 {{\n        v * 2\n    }}\n    inner(a) + {i}\n}}\n\n"
        ));
        i += 1;
    }
    while out.lines().count() < lines - 3 {
        out.push_str("// padding\n");
    }
    out.push_str("pub fn target_function(x: i64) -> i64 {\n    x + 1\n}\n");
    out
}

#[derive(Default)]
struct SynCount(usize);

impl<'ast> Visit<'ast> for SynCount {
    fn visit_item_fn(&mut self, item: &'ast syn::ItemFn) {
        self.0 += 1;
        syn::visit::visit_item_fn(self, item);
    }
    fn visit_impl_item_fn(&mut self, item: &'ast syn::ImplItemFn) {
        self.0 += 1;
        syn::visit::visit_impl_item_fn(self, item);
    }
    fn visit_trait_item_fn(&mut self, item: &'ast syn::TraitItemFn) {
        self.0 += 1;
        syn::visit::visit_trait_item_fn(self, item);
    }
}

const PYTHON_LISTING: &str = "
import ast, json, sys, time
source = open(sys.argv[1], 'rb').read()
start = time.perf_counter()
tree = ast.parse(source)
names = [n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
elapsed = time.perf_counter() - start
print(json.dumps({'count': len(names), 'seconds': elapsed}))
";

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

fn row(what: &str, ours: Duration, peer_name: &str, peer: Duration) {
    println!(
        "| {what} | {} | {peer_name} | {} | {:.2} |",
        ms(ours),
        ms(peer),
        ours.as_secs_f64() / peer.as_secs_f64()
    );
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` passes nothing special: run a short version then.
    let quick = !std::env::args().any(|a| a == "--bench");
    let runs = if quick { 3 } else { RUNS };
    let load_before = load_average();

    let dir = tempfile::tempdir().unwrap();
    let python_file = dir.path().join("generated.py");
    let rust_file = dir.path().join("generated.rs");
    let python = python_source(10_000);
    let rust = rust_source(10_000);
    std::fs::write(&python_file, &python).unwrap();
    std::fs::write(&rust_file, &rust).unwrap();
    let path = |p: &Path| p.to_string_lossy().into_owned();

    // Spawn → initialize answer, and the peer: a Python interpreter that does nothing.
    let spawn_to_initialize = median(
        (0..runs)
            .map(|_| {
                let start = Instant::now();
                let mut server = Server::spawn();
                let answer = server.initialize();
                let elapsed = start.elapsed();
                assert_eq!(answer["result"]["serverInfo"]["name"], "fault");
                server.close();
                elapsed
            })
            .collect(),
    );
    let python_available = Command::new("python3")
        .args(["-c", "pass"])
        .status()
        .is_ok_and(|s| s.success());
    let python_start = if python_available {
        time(runs, || {
            Command::new("python3")
                .args(["-c", "pass"])
                .status()
                .unwrap()
        })
    } else {
        Duration::ZERO
    };

    let mut server = Server::spawn();
    server.initialize();
    let tools_list = time(runs * 5, || server.request("tools/list", json!({})));
    // A misspelled field is refused before anything runs: the widest schema (an impact tool's), and a field
    // nested in a list of objects (the chaos scenario's calls).
    let refused_top = time(runs * 5, || {
        let answer = server.call(
            "fault_run_latency_impact_scenario",
            json!({"url": "http://127.0.0.1:9/", "latency": 50, "deviaton": 50}),
        );
        assert_eq!(answer["result"]["isError"], true, "{answer}");
    });
    let refused_nested = time(runs * 5, || {
        let answer = server.call(
            "fault_run_mcp_chaos_scenario",
            json!({"server": {"command": "python"}, "calls": [{"tool": "a"}, {"tol": "b"}]}),
        );
        assert_eq!(answer["result"]["isError"], true, "{answer}");
    });

    let listed = server.call(
        "fault_list_function_names",
        json!({"file": path(&python_file)}),
    );
    let python_count = listed["result"]["structuredContent"]["functions"]
        .as_array()
        .unwrap()
        .len();
    let extract_python = time(runs, || {
        server.call(
            "fault_extract_code_block",
            json!({"file": path(&python_file), "func": "target_function"}),
        )
    });
    let rust_count = server.call(
        "fault_list_function_names",
        json!({"file": path(&rust_file)}),
    )["result"]["structuredContent"]["functions"]
        .as_array()
        .unwrap()
        .len();
    let extract_rust = time(runs, || {
        server.call(
            "fault_extract_code_block",
            json!({"file": path(&rust_file), "func": "Point7::x"}),
        )
    });
    let python_cache = first_and_repeated(
        &mut server,
        dir.path(),
        "py",
        &python,
        tree_sitter_python::LANGUAGE.into(),
        runs,
    );
    let rust_cache = first_and_repeated(
        &mut server,
        dir.path(),
        "rs",
        &rust,
        tree_sitter_rust::LANGUAGE.into(),
        runs,
    );
    let tsx_grammar: tree_sitter::Language = tree_sitter_typescript::LANGUAGE_TSX.into();
    let typescript_grammar: tree_sitter::Language =
        tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into();
    let (tsx, tsx_label) = match std::env::var_os("FAULT_BENCH_TSX") {
        Some(file) => {
            let source = std::fs::read_to_string(&file).unwrap();
            let label = format!(
                "{} ({} lines)",
                Path::new(&file).display(),
                source.lines().count()
            );
            (source, label)
        }
        None => {
            let source = tsx_source(14_000);
            let label = format!("generated, {} lines", source.lines().count());
            (source, label)
        }
    };
    let typescript = typescript_source(10_000);
    let tsx_file = dir.path().join("app.tsx");
    let typescript_file = dir.path().join("generated.ts");
    std::fs::write(&tsx_file, &tsx).unwrap();
    std::fs::write(&typescript_file, &typescript).unwrap();
    let tsx_cache = first_and_repeated(
        &mut server,
        dir.path(),
        "tsx",
        &tsx,
        tsx_grammar.clone(),
        runs,
    );
    let typescript_cache = first_and_repeated(
        &mut server,
        dir.path(),
        "ts",
        &typescript,
        typescript_grammar.clone(),
        runs,
    );
    let count = |server: &mut Server, file: &Path| {
        server.call("fault_list_function_names", json!({"file": path(file)}))["result"]
            ["structuredContent"]["functions"]
            .as_array()
            .map_or(0, Vec::len)
    };
    let (tsx_count, typescript_count) = (
        count(&mut server, &tsx_file),
        count(&mut server, &typescript_file),
    );
    server.close();
    let tsx_cold = first_listing_in_a_fresh_server(dir.path(), "tsx", &tsx, tsx_grammar, runs);
    let typescript_cold =
        first_listing_in_a_fresh_server(dir.path(), "ts", &typescript, typescript_grammar, runs);
    let peer_runs = runs.min(7);
    let tsx_peer = typescript_peer(dir.path(), &tsx_file, peer_runs);
    let typescript_peer = typescript_peer(dir.path(), &typescript_file, peer_runs);

    // Peers for listing: python3 + ast (whole process, and ast alone), syn in this process.
    let (python_process, python_ast_only, ast_count) = if python_available {
        let mut inside = Vec::new();
        let mut count = 0;
        let whole = time(runs, || {
            let output = Command::new("python3")
                .args(["-c", PYTHON_LISTING])
                .arg(&python_file)
                .output()
                .unwrap();
            let answer: Value = serde_json::from_slice(&output.stdout).unwrap();
            count = answer["count"].as_u64().unwrap() as usize;
            inside.push(Duration::from_secs_f64(answer["seconds"].as_f64().unwrap()));
        });
        (whole, median(inside), count)
    } else {
        (Duration::ZERO, Duration::ZERO, 0)
    };
    let mut syn_count = 0;
    let syn_listing = time(runs, || {
        let file = syn::parse_file(&rust).unwrap();
        let mut counter = SynCount::default();
        counter.visit_file(&file);
        syn_count = counter.0;
    });

    println!();
    println!(
        "fault MCP code tools, median of {runs} runs (10,000-line files: Python {} lines / {python_count} functions \
         (ast: {ast_count}), Rust {} lines / {rust_count} functions (syn: {syn_count}))",
        python.lines().count(),
        rust.lines().count()
    );
    println!();
    println!("| measurement | fault | peer | peer time | ratio fault/peer |");
    println!("|---|---|---|---|---|");
    if python_available {
        row(
            "spawn → initialize answer",
            spawn_to_initialize,
            "python3 -c pass (start + exit)",
            python_start,
        );
        row(
            "list functions, Python 10k lines, first call (MCP round trip)",
            python_cache.first_call,
            "python3 process: read + ast.parse + walk",
            python_process,
        );
        row(
            "list functions, Python 10k lines, first call (MCP round trip)",
            python_cache.first_call,
            "ast.parse + walk inside Python",
            python_ast_only,
        );
        row(
            "extract one function, Python 10k lines (parse cached)",
            extract_python,
            "ast.parse + walk inside Python",
            python_ast_only,
        );
    } else {
        println!(
            "| spawn → initialize answer | {} | (python3 not found) | | |",
            ms(spawn_to_initialize)
        );
    }
    row(
        "tools/list round trip",
        tools_list,
        "spawn → initialize",
        spawn_to_initialize,
    );
    row(
        "a misspelled field refused (latency impact tool, 23 fields)",
        refused_top,
        "tools/list round trip",
        tools_list,
    );
    row(
        "a misspelled field refused (chaos tool, in calls[1])",
        refused_nested,
        "tools/list round trip",
        tools_list,
    );
    row(
        "list functions, Rust 10k lines, first call (MCP round trip)",
        rust_cache.first_call,
        "syn::parse_file + visit, in process",
        syn_listing,
    );
    row(
        "extract one function, Rust 10k lines (parse cached)",
        extract_rust,
        "syn::parse_file + visit, in process",
        syn_listing,
    );
    for (language, figures) in [("Python", &python_cache), ("Rust", &rust_cache)] {
        row(
            &format!("list functions, {language} 10k lines, first call (MCP), wall"),
            figures.first_call,
            "bare tree-sitter parse, in process, wall",
            figures.bare_parse,
        );
        row(
            &format!("list functions, {language} 10k lines, first call (MCP), server CPU (mean)"),
            figures.first_call_cpu,
            "bare tree-sitter parse, thread CPU (mean)",
            figures.bare_parse_cpu,
        );
        row(
            &format!("list functions, {language} 10k lines, repeated call (MCP), wall"),
            figures.repeated_call,
            "encode + decode of the same answer, in process, wall",
            figures.encode_decode,
        );
        row(
            &format!(
                "list functions, {language} 10k lines, repeated call (MCP), server CPU (mean)"
            ),
            figures.repeated_call_cpu,
            "encode + decode of the same answer, thread CPU (mean)",
            figures.encode_decode_cpu,
        );
    }
    println!();
    println!(
        "TSX: {tsx_label}, {tsx_count} functions; TypeScript: generated, {} lines, {typescript_count} functions",
        typescript.lines().count()
    );
    println!();
    println!("| measurement | fault | peer | peer time | ratio fault/peer |");
    println!("|---|---|---|---|---|");
    for (language, figures, cold, peer) in [
        ("TSX", &tsx_cache, tsx_cold, &tsx_peer),
        (
            "TypeScript",
            &typescript_cache,
            typescript_cold,
            &typescript_peer,
        ),
    ] {
        row(
            &format!("list functions, {language}, first call (MCP), wall"),
            figures.first_call,
            "bare tree-sitter parse, in process, wall",
            figures.bare_parse,
        );
        row(
            &format!("list functions, {language}, first call (MCP), server CPU (mean)"),
            figures.first_call_cpu,
            "bare tree-sitter parse, thread CPU (mean)",
            figures.bare_parse_cpu,
        );
        row(
            &format!(
                "list functions, {language}, first call of a fresh server (queries compiled then), wall"
            ),
            cold.0,
            "bare tree-sitter parse, in process, wall",
            cold.1,
        );
        row(
            &format!("list functions, {language}, repeated call (MCP), wall"),
            figures.repeated_call,
            "encode + decode of the same answer, in process, wall",
            figures.encode_decode,
        );
        match peer {
            Ok(peer) => {
                row(
                    &format!("list functions, {language}, first call (MCP), wall"),
                    figures.first_call,
                    &format!(
                        "TypeScript compiler, parse + walk, warm in node ({} functions)",
                        peer.count
                    ),
                    peer.warm,
                );
                row(
                    &format!("list functions, {language}, first call of a fresh server, wall"),
                    cold.0,
                    "TypeScript compiler, first parse + walk in a fresh node",
                    peer.first_in_process,
                );
                row(
                    &format!("list functions, {language}, first call of a fresh server, wall"),
                    cold.0,
                    "node process: load typescript + parse + walk",
                    peer.process,
                );
            }
            Err(why) => println!(
                "| list functions, {language} | | TypeScript compiler in node: SKIPPED, {why} | | |"
            ),
        }
    }
    println!();
    println!(
        "load average: {load_before} (start), {} (end)",
        load_average()
    );
}

/// The first three fields of /proc/loadavg (1, 5 and 15 minutes).
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}
