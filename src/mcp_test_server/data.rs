//! Ordinary tools with an `outputSchema` and `structuredContent` (the text content is the same JSON), so a
//! drifted, retyped or truncated result is visible to a client that checks it.

use rmcp::{
    ErrorData,
    model::{CallToolResult, JsonObject},
    tool, tool_router,
};
use schemars::JsonSchema;
use serde::Serialize;

use super::{TestServer, arguments::in_range, input_schema, invalid_arguments, read_arguments};
use crate::serve::{json_and_structured, output_schema};

/// Highest `id` of `get_item`, and so of the catalogue.
pub const MAX_ITEM_ID: i64 = 1_000_000;
/// Most items `list_items` returns.
pub const MAX_LIST_COUNT: i64 = 1000;

const ADJECTIVES: [&str; 8] = [
    "Sturdy", "Compact", "Silent", "Rapid", "Bright", "Modular", "Rugged", "Smart",
];
const NOUNS: [&str; 8] = [
    "Widget", "Gadget", "Sensor", "Bracket", "Valve", "Router", "Lamp", "Gear",
];
const TAGS: [&str; 6] = ["hardware", "tools", "outdoor", "office", "spare", "new"];

/// Arguments of `echo`.
#[derive(Debug, JsonSchema)]
pub struct EchoInput {
    /// Any text; it comes back unchanged.
    pub text: String,
}

/// `structuredContent` of `echo`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct EchoOutput {
    /// The text sent.
    pub text: String,
    /// Its length in Unicode scalar values (characters), not bytes.
    pub length: u64,
}

/// Arguments of `get_item`.
#[derive(Debug, JsonSchema)]
pub struct GetItemInput {
    /// The item's id, 1 to 1000000.
    pub id: i64,
}

/// One catalogue item: a value of each JSON type, and a nested object.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Item {
    pub id: u64,
    pub name: String,
    /// Price with two decimals.
    pub price: f64,
    /// One to three tags.
    pub tags: Vec<String>,
    pub in_stock: bool,
    pub dimensions: Dimensions,
}

#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Dimensions {
    pub width_cm: f64,
    pub height_cm: f64,
}

/// Arguments of `list_items`.
#[derive(Debug, JsonSchema)]
pub struct ListItemsInput {
    /// How many items, 0 to 1000 (default 10): items 1..=count.
    pub count: Option<i64>,
}

/// `structuredContent` of `list_items`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ListItemsOutput {
    /// Items 1..=count, in id order.
    pub items: Vec<Item>,
    /// How many items were asked for (a truncated result has fewer `items`).
    pub count: u64,
}

/// The item with this id: every field is a fixed function of the id.
pub fn item(id: u64) -> Item {
    let index = |modulus: usize, offset: u64| ((id + offset) % modulus as u64) as usize;
    let tag_count = 1 + (id % 3) as usize;
    Item {
        id,
        name: format!(
            "{} {} {id}",
            ADJECTIVES[index(ADJECTIVES.len(), 0)],
            NOUNS[(id / 8 % NOUNS.len() as u64) as usize]
        ),
        price: ((id * 7919) % 100_000) as f64 / 100.0,
        tags: (0..tag_count)
            .map(|i| TAGS[index(TAGS.len(), 2 * i as u64)].to_owned())
            .collect(),
        in_stock: !id.is_multiple_of(4),
        dimensions: Dimensions {
            width_cm: (10 + id % 50) as f64 + 0.5,
            height_cm: (5 + id % 30) as f64,
        },
    }
}

#[tool_router(router = data_router, vis = "pub(super)")]
impl TestServer {
    #[tool(
        name = "echo",
        description = "Return `text` unchanged with its length in characters: {\"text\", \"length\"}.",
        input_schema = input_schema::<EchoInput>(),
        output_schema = output_schema::<EchoOutput>(),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn echo(&self, raw: JsonObject) -> Result<CallToolResult, ErrorData> {
        Ok(
            match read_arguments(raw, |a| {
                Ok(EchoInput {
                    text: a.required_string("text")?,
                })
            }) {
                Ok(input) => {
                    let output = EchoOutput {
                        length: input.text.chars().count() as u64,
                        text: input.text,
                    };
                    json_and_structured(&output, &output)
                }
                Err(refusal) => invalid_arguments(refusal),
            },
        )
    }

    #[tool(
        name = "get_item",
        description = "Return catalogue item `id` (1 to 1000000): {\"id\", \"name\", \"price\" (number), \"tags\" \
            (strings), \"in_stock\" (bool), \"dimensions\" {\"width_cm\", \"height_cm\"}}. The same id always \
            gives the same item.",
        input_schema = input_schema::<GetItemInput>(),
        output_schema = output_schema::<Item>(),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn get_item(&self, raw: JsonObject) -> Result<CallToolResult, ErrorData> {
        Ok(
            match read_arguments(raw, |a| {
                Ok(GetItemInput {
                    id: in_range("id", a.required_integer("id")?, 1, MAX_ITEM_ID)?,
                })
            }) {
                Ok(input) => {
                    let item = item(input.id.unsigned_abs());
                    json_and_structured(&item, &item)
                }
                Err(refusal) => invalid_arguments(refusal),
            },
        )
    }

    #[tool(
        name = "list_items",
        description = "Return catalogue items 1..=count (count 0 to 1000, default 10) as {\"items\": [...], \
            \"count\"}; each item as get_item returns it. Large counts make results a truncation can cut.",
        input_schema = input_schema::<ListItemsInput>(),
        output_schema = output_schema::<ListItemsOutput>(),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn list_items(&self, raw: JsonObject) -> Result<CallToolResult, ErrorData> {
        Ok(
            match read_arguments(raw, |a| {
                Ok(ListItemsInput {
                    count: a
                        .optional_integer("count")?
                        .map(|count| in_range("count", count, 0, MAX_LIST_COUNT))
                        .transpose()?,
                })
            }) {
                Ok(input) => {
                    let count = input.count.unwrap_or(10).unsigned_abs();
                    let output = ListItemsOutput {
                        items: (1..=count).map(item).collect(),
                        count,
                    };
                    json_and_structured(&output, &output)
                }
                Err(refusal) => invalid_arguments(refusal),
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_are_fixed_functions_of_their_id() {
        assert_eq!(item(7), item(7));
        let seven = serde_json::to_value(item(7)).unwrap();
        assert_eq!(
            seven,
            serde_json::json!({
                "id": 7,
                "name": "Smart Widget 7",
                "price": 554.33,
                "tags": ["tools", "office"],
                "in_stock": true,
                "dimensions": {"width_cm": 17.5, "height_cm": 12.0}
            })
        );
    }
}
