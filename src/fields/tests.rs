use std::{collections::BTreeMap, time::Duration};

use serde_json::{Value, json};

use super::*;
use crate::lenient::Number;

const MEAN: Field = Field::millis(
    "latency",
    "Mean latency to add",
    Number::above_zero(3_600_000.0, ""),
)
.flag("latency-mean")
.required("300");
const DEVIATION: Field = Field::millis(
    "deviation",
    "Standard deviation",
    Number::from_to(0.0, 3_600_000.0),
)
.flag("latency-stddev")
.default("0");

fn tool(arguments: Value) -> FieldInput {
    FieldInput::from_arguments([&MEAN, &DEVIATION], arguments.as_object().unwrap())
}

#[test]
fn one_reader_names_the_field_as_the_face_does() {
    let input = tool(json!({"latency": "250", "deviation": ""}));
    assert_eq!(input.millis(&MEAN), Ok(Duration::from_millis(250)));
    assert_eq!(input.millis(&DEVIATION), Ok(Duration::ZERO));
    let missing = tool(json!({})).millis(&MEAN).unwrap_err();
    assert_eq!(
        missing.to_string(),
        "latency: is required: a number of ms, more than 0 and at most 3600000, e.g. 300"
    );
    let flags = FieldInput {
        given: BTreeMap::from([("deviation", json!("-1"))]),
        face: Face::Flags { prefix: "latency" },
        path: String::new(),
    };
    assert_eq!(
        flags.millis(&DEVIATION).unwrap_err().to_string(),
        "--latency-stddev: -1 is out of range; accepted: 0 to 3600000"
    );
}

#[test]
fn an_unknown_field_is_named_with_the_closest_declared_one() {
    let declared = ["url", "duration", "deviation", "num_clients", "rps"];
    assert_eq!(
        unknown_field("deviaton", &declared),
        "unknown field 'deviaton'; did you mean 'deviation'? (it takes: url, duration, deviation, \
         num_clients, rps)"
    );
    assert_eq!(closest("durration", declared), Some("duration"));
    assert_eq!(closest("numClients", declared), Some("num_clients"));
    assert_eq!(closest("sched", declared), None);
}

#[test]
fn the_schema_says_range_default_and_example() {
    let schema = DEVIATION.schema();
    assert_eq!(schema["minimum"], 0);
    assert_eq!(schema["maximum"], 3_600_000);
    assert_eq!(schema["default"], 0);
    assert_eq!(MEAN.schema()["exclusiveMinimum"], 0);
    assert_eq!(MEAN.schema()["examples"], json!([300]));
    assert_eq!(
        DEVIATION.long("latency") + " " + &Field::switch("per_x", "x").long("latency"),
        "latency-stddev latency-per-x"
    );
}
