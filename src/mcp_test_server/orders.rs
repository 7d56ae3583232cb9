//! A write tool and its witness: `create_order` is destructive and not idempotent (each call creates a new
//! order, even with the same arguments), and `orders_count` reads how many orders this server created, so a
//! test can hold a report's duplicate writes against what the server really did.

use std::sync::atomic::Ordering;

use rmcp::{
    ErrorData,
    model::{CallToolResult, JsonObject},
    tool, tool_router,
};
use schemars::JsonSchema;
use serde::Serialize;

use super::{
    TestServer,
    arguments::in_range,
    data::{MAX_ITEM_ID, item},
    input_schema, invalid_arguments, read_arguments,
};
use crate::serve::{json_and_structured, output_schema};

/// Most units one order takes.
pub const MAX_QUANTITY: i64 = 1000;

/// Arguments of `create_order`.
#[derive(Debug, JsonSchema)]
pub struct CreateOrderInput {
    /// The catalogue item ordered, 1 to 1000000.
    pub item_id: i64,
    /// Units, 1 to 1000 (default 1).
    pub quantity: Option<i64>,
}

/// `structuredContent` of `create_order`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Order {
    /// A new number for every order, from 1.
    pub order_id: u64,
    pub item_id: u64,
    pub quantity: u64,
    /// The item's price times the quantity, with two decimals.
    pub total: f64,
}

/// Arguments of `orders_count`: none.
#[derive(Debug, JsonSchema)]
pub struct OrdersCountInput {}

/// `structuredContent` of `orders_count`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct OrdersCount {
    /// Orders this server created since it started (every session of it).
    pub count: u64,
}

#[tool_router(router = orders_router, vis = "pub(super)")]
impl TestServer {
    #[tool(
        name = "create_order",
        description = "Create an order of `quantity` (1 to 1000, default 1) units of catalogue item `item_id`: \
            {\"order_id\", \"item_id\", \"quantity\", \"total\"}. Every call creates a new order, even with the \
            same arguments; orders_count says how many there are.",
        input_schema = input_schema::<CreateOrderInput>(),
        output_schema = output_schema::<Order>(),
        annotations(
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn create_order(&self, raw: JsonObject) -> Result<CallToolResult, ErrorData> {
        Ok(
            match read_arguments(raw, |a| {
                Ok(CreateOrderInput {
                    item_id: in_range("item_id", a.required_integer("item_id")?, 1, MAX_ITEM_ID)?,
                    quantity: a
                        .optional_integer("quantity")?
                        .map(|q| in_range("quantity", q, 1, MAX_QUANTITY))
                        .transpose()?,
                })
            }) {
                Ok(input) => {
                    let order_id = self.orders.fetch_add(1, Ordering::SeqCst) + 1;
                    let item_id = input.item_id.unsigned_abs();
                    let quantity = input.quantity.unwrap_or(1).unsigned_abs();
                    let total = (item(item_id).price * quantity as f64 * 100.0).round() / 100.0;
                    let order = Order {
                        order_id,
                        item_id,
                        quantity,
                        total,
                    };
                    json_and_structured(&order, &order)
                }
                Err(refusal) => invalid_arguments(refusal),
            },
        )
    }

    #[tool(
        name = "orders_count",
        description = "How many orders create_order has created since the server started: {\"count\"}.",
        input_schema = input_schema::<OrdersCountInput>(),
        output_schema = output_schema::<OrdersCount>(),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn orders_count(&self, raw: JsonObject) -> Result<CallToolResult, ErrorData> {
        Ok(match read_arguments(raw, |_| Ok(())) {
            Ok(()) => {
                let count = OrdersCount {
                    count: self.orders.load(Ordering::SeqCst),
                };
                json_and_structured(&count, &count)
            }
            Err(refusal) => invalid_arguments(refusal),
        })
    }
}
