//! A small library written for synth: text helpers, statistics, geometry, an inventory and a
//! tiny expression parser. Every public item has a doc comment; some have unit tests.

pub mod geometry;
pub mod inventory;
pub mod parse;
pub mod stats;
pub mod text;

pub use geometry::{Point, Shape};
pub use inventory::Inventory;
