//! The points' payload, as written and as read back: the chunk's metadata, names and text.

use std::collections::HashMap;

use qdrant_client::{
    Payload,
    qdrant::{PointId, Value, point_id::PointIdOptions, value::Kind},
};

use super::super::{ChunkMeta, ChunkPoint};

/// Fields read back when comparing runs (never the text or the vector).
pub(super) const META_FIELDS: [&str; 7] = [
    "path",
    "language",
    "start_line",
    "end_line",
    "content_hash",
    "file_hash",
    "file_chunks",
];
pub(super) fn string_field(payload: &HashMap<String, Value>, key: &str) -> String {
    match payload.get(key).and_then(|v| v.kind.as_ref()) {
        Some(Kind::StringValue(s)) => s.clone(),
        _ => String::new(),
    }
}

fn int_field(payload: &HashMap<String, Value>, key: &str) -> u32 {
    match payload.get(key).and_then(|v| v.kind.as_ref()) {
        Some(Kind::IntegerValue(i)) => u32::try_from(*i).unwrap_or(0),
        Some(Kind::DoubleValue(d)) if *d >= 0.0 => *d as u32,
        _ => 0,
    }
}

pub(super) fn point_id_string(id: Option<&PointId>) -> String {
    match id.and_then(|p| p.point_id_options.as_ref()) {
        Some(PointIdOptions::Uuid(u)) => u.clone(),
        Some(PointIdOptions::Num(n)) => n.to_string(),
        None => String::new(),
    }
}

pub(super) fn meta_from_payload(payload: &HashMap<String, Value>) -> ChunkMeta {
    ChunkMeta {
        path: string_field(payload, "path"),
        language: string_field(payload, "language"),
        start_line: int_field(payload, "start_line"),
        end_line: int_field(payload, "end_line"),
        content_hash: string_field(payload, "content_hash"),
        file_hash: string_field(payload, "file_hash"),
        file_chunks: int_field(payload, "file_chunks"),
    }
}

pub(super) fn payload_of(point: &ChunkPoint) -> Payload {
    let mut payload = Payload::with_capacity(11);
    payload.insert("path", point.meta.path.as_str());
    payload.insert("language", point.meta.language.as_str());
    payload.insert("kind", point.kind.as_str());
    payload.insert("function", point.name.as_str());
    payload.insert("qualified_name", point.qualified_name.as_str());
    payload.insert("start_line", i64::from(point.meta.start_line));
    payload.insert("end_line", i64::from(point.meta.end_line));
    payload.insert("content_hash", point.meta.content_hash.as_str());
    payload.insert("file_hash", point.meta.file_hash.as_str());
    payload.insert("file_chunks", i64::from(point.meta.file_chunks));
    payload.insert("text", point.text.as_str());
    payload
}
