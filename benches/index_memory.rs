//! Resident memory of `fault agent tool` with the embedded store (run with `cargo bench --bench index_memory`):
//! index a generated tree of `FAULT_BENCH_MEMORY_CHUNKS` chunks (default 100,000) and query it, then index and
//! query a second, smaller project; after each step, VmRSS and VmHWM of the server from /proc, against the
//! vector cache ceiling (`FAULT_VECTOR_CACHE_MIB`, default 256).
//!
//! Embeddings and the chat model come from a stand-in on 127.0.0.1 speaking OpenAI's wire format with
//! 1536-dimensional vectors (the size of OpenAI's small embedding model), so the figures are the server's
//! own memory, not a model's.

use std::{
    io::{BufRead, BufReader, Read, Write},
    net::{TcpListener, TcpStream},
    path::{Path, PathBuf},
    time::Instant,
};

use serde_json::{Value, json};

#[path = "support/mcp_stdio.rs"]
mod mcp_stdio;

const DIM: usize = 1536;
const FUNCTIONS_PER_FILE: usize = 50;

/// One request on a keep-alive connection: the path and the body.
fn read_request(reader: &mut BufReader<TcpStream>) -> Option<(String, Vec<u8>)> {
    let mut line = String::new();
    if reader.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let path = line.split_whitespace().nth(1)?.to_owned();
    let mut length = 0usize;
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).ok()?;
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().ok()?;
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some((path, body))
}

/// A cheap deterministic vector for a text: a few non-zero dimensions chosen by its bytes.
fn vector_for(text: &str) -> String {
    let mut seed = text.bytes().fold(0xcbf29ce484222325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100000001b3)
    });
    let mut v = vec!["0"; DIM];
    let mut picked = Vec::new();
    for _ in 0..8 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        picked.push((seed % DIM as u64) as usize);
    }
    for i in picked {
        v[i] = "0.35";
    }
    format!("[{}]", v.join(","))
}

fn answer(path: &str, body: &[u8]) -> String {
    let request: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    if path.ends_with("/embeddings") {
        let inputs: Vec<String> = match &request["input"] {
            Value::Array(items) => items
                .iter()
                .map(|i| i.as_str().unwrap_or_default().to_owned())
                .collect(),
            Value::String(one) => vec![one.clone()],
            _ => Vec::new(),
        };
        let data: Vec<String> = inputs
            .iter()
            .enumerate()
            .map(|(i, text)| {
                format!(
                    r#"{{"object":"embedding","index":{i},"embedding":{}}}"#,
                    vector_for(text)
                )
            })
            .collect();
        format!(
            r#"{{"object":"list","model":"text-embedding-3-small","data":[{}],"usage":{{"prompt_tokens":1,"total_tokens":1}}}}"#,
            data.join(",")
        )
    } else {
        let content =
            json!({"new_code": "def f():\n    return 1\n", "explanation": "bench"}).to_string();
        json!({
            "id": "chatcmpl-1", "object": "chat.completion", "created": 1_700_000_000u32, "model": "bench",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content, "refusal": null},
                         "logprobs": null, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20}
        })
        .to_string()
    }
}

/// The stand-in: every connection on its own thread, keep-alive.
fn start_stand_in() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut writer = stream.try_clone().unwrap();
                let mut reader = BufReader::new(stream);
                while let Some((path, body)) = read_request(&mut reader) {
                    let body = answer(&path, &body);
                    let head = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                        body.len()
                    );
                    if writer.write_all(head.as_bytes()).is_err()
                        || writer.write_all(body.as_bytes()).is_err()
                    {
                        return;
                    }
                }
            });
        }
    });
    format!("http://{addr}/v1")
}

/// A tree of Python files with `chunks` function chunks in all (plus one top-level chunk per file).
fn generate_tree(dir: &Path, chunks: usize) -> PathBuf {
    let files = chunks.div_ceil(FUNCTIONS_PER_FILE);
    for f in 0..files {
        let sub = dir.join(format!("pkg_{:02}", f % 20));
        std::fs::create_dir_all(&sub).unwrap();
        let mut source = String::from("import json\n\n\n");
        for g in 0..FUNCTIONS_PER_FILE.min(chunks - f * FUNCTIONS_PER_FILE) {
            source.push_str(&format!(
                "def handler_{f}_{g}(request, retries=3):\n    \"\"\"Handle request kind {g} of module {f}.\"\"\"\n    \
                 for attempt in range(retries):\n        payload = json.loads(request.body)\n        \
                 if payload.get(\"kind\") == {g}:\n            return payload\n    return None\n\n\n"
            ));
        }
        std::fs::write(sub.join(format!("module_{f:05}.py")), source).unwrap();
    }
    dir.canonicalize().unwrap()
}

/// (VmRSS, VmHWM) of `pid`, in MiB.
fn memory_mib(pid: u32) -> (f64, f64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|kb| kb.parse::<f64>().ok())
            .map_or(f64::NAN, |kb| kb / 1024.0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

fn main() {
    let chunks: usize = std::env::var("FAULT_BENCH_MEMORY_CHUNKS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let ceiling_mib: u64 = std::env::var("FAULT_VECTOR_CACHE_MIB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256);
    let work = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let big = generate_tree(&work.path().join("big"), chunks);
    let small = generate_tree(&work.path().join("small"), chunks / 10);
    let url = start_stand_in();
    let ceiling = ceiling_mib.to_string();
    let data_dir = data.path().display().to_string();
    let mut server = mcp_stdio::Server::spawn_with(
        &[
            "--llm-base-url",
            &url,
            "--llm-prompt-reasoning-model",
            "bench",
            "--llm-embed-model",
            "text-embedding-3-small",
            "--llm-embed-model-dim",
            "1536",
            "--vector-store",
            "embedded",
        ],
        &[
            ("FAULT_DATA_DIR", &data_dir),
            ("FAULT_VECTOR_CACHE_MIB", &ceiling),
            ("OPENAI_API_KEY", "bench"),
            ("FAULT_LLM_API_KEY", "bench"),
            ("FAULT_LLM_TIMEOUT_SECS", "600"),
        ],
    );
    server.initialize();
    let pid = server.pid();
    println!(
        "index memory: {chunks} + {} chunks, {DIM} dimensions, vector cache ceiling {ceiling_mib} MiB",
        chunks / 10
    );
    println!(
        "{:<40} {:>10} {:>10} {:>9}",
        "step", "VmRSS MiB", "VmHWM MiB", "time s"
    );
    let step = |server: &mut mcp_stdio::Server, name: &str, tool: &str, args: Value| {
        let started = Instant::now();
        server.call(tool, args);
        let (rss, hwm) = memory_mib(pid);
        println!(
            "{name:<40} {rss:>10.0} {hwm:>10.0} {:>9.1}",
            started.elapsed().as_secs_f64()
        );
    };
    let (rss, hwm) = memory_mib(pid);
    println!("{:<40} {rss:>10.0} {hwm:>10.0}", "started");
    let query = |root: &Path| {
        json!({"snippet": "def f(request):\n    return request.body\n", "lang": "python", "score": 0.3,
               "target_score": 0.8, "file": root.join("pkg_00/module_00000.py").display().to_string()})
    };
    let tool = "fault_suggest_better_function_reliability";
    step(
        &mut server,
        "index project 1",
        "fault_index_source_code",
        json!({"source_dir": big.display().to_string(), "lang": "python"}),
    );
    step(&mut server, "query project 1", tool, query(&big));
    step(&mut server, "query project 1 again", tool, query(&big));
    step(
        &mut server,
        "index project 2",
        "fault_index_source_code",
        json!({"source_dir": small.display().to_string(), "lang": "python"}),
    );
    step(&mut server, "query project 2", tool, query(&small));
    step(&mut server, "query project 1 after 2", tool, query(&big));
    server.close();
}
