//! `fault run`, the TCP fault proxy: its CLI, each fault's effect and fields, measuring, and faults on dependencies.

mod cli;
mod dependency_faults;
mod fault_fields;
mod faults;
mod measure;
