//! The capacity search's report: for each side (without the fault, then with it) the steps of offered load it
//! ran, each judged from its impact report's figures (not measured a second time), the highest rate that met
//! every SLO, the knee, and what the fault cost.
//!
//! Definitions (stated in the report too):
//! - a step breaks when an SLO is not met, its errors are over the error budget, or the rate achieved falls
//!   more than [`MAX_SHORTFALL_PERCENT`] short of the rate offered;
//! - the achieved rate is the answers that ended per second, counted from the step's second second on (the
//!   first second's answers are still arriving), the offered rate what the schedule had due in those seconds;
//! - the capacity is the highest rate that held below the lowest rate that broke;
//! - the knee is the first step, in rate order, whose p99 is at least twice the first step's.

mod markdown;
mod report;
mod sides;
mod steps;

pub use markdown::render;
pub use report::{CapacityReport, SCHEMA_VERSION};
pub use sides::{Cost, KNEE_FACTOR, SideFigures, WITH_FAULT, WITHOUT_FAULT};
pub use steps::{Break, MAX_SHORTFALL_PERCENT, SearchInfo, StepFigures, StepPart};
