//! The plan's gates as the budgets the chaos report judges a run against: the plan names no report type, and
//! the report no plan type.

use super::plan::Gates;
use crate::report::chaos::gates::Budgets;

impl Budgets for Gates {
    fn max_detection_ms(&self) -> Option<u64> {
        self.max_detection_ms
    }

    fn max_recovery_ms(&self) -> Option<u64> {
        self.max_recovery_ms
    }

    fn require_clean_timeout(&self) -> bool {
        self.require_clean_timeout
    }

    fn max_runaways(&self) -> Option<u64> {
        self.max_runaways
    }

    fn duplicate_writes(&self) -> Option<u64> {
        self.duplicate_writes
    }
}
