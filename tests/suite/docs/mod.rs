//! The book and README: built and linked, every example run, the reference tables in step with the code.

mod book;
mod examples;
mod kubernetes_examples;
mod reference;
