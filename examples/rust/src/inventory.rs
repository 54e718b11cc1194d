//! A stock inventory keyed by item name.

use std::collections::BTreeMap;

/// Why a stock change was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StockError {
    /// The item is not in the inventory.
    Unknown(String),
    /// Fewer units are in stock than were asked for.
    Insufficient { item: String, available: u32, requested: u32 },
}

/// Items and their counts, kept in name order.
#[derive(Debug, Default, Clone)]
pub struct Inventory {
    items: BTreeMap<String, u32>,
}

impl Inventory {
    /// An empty inventory.
    pub fn new() -> Self {
        Inventory { items: BTreeMap::new() }
    }

    /// Adds `count` units of `item`, returning the new count.
    pub fn add(&mut self, item: &str, count: u32) -> u32 {
        let entry = self.items.entry(item.to_string()).or_insert(0);
        *entry += count;
        *entry
    }

    /// Removes `count` units of `item`, refusing to go below zero.
    pub fn remove(&mut self, item: &str, count: u32) -> Result<u32, StockError> {
        let available = *self.items.get(item).ok_or_else(|| StockError::Unknown(item.to_string()))?;
        if available < count {
            return Err(StockError::Insufficient { item: item.to_string(), available, requested: count });
        }
        let left = available - count;
        self.items.insert(item.to_string(), left);
        Ok(left)
    }

    /// How many units of `item` are in stock (zero if unknown).
    pub fn count(&self, item: &str) -> u32 {
        self.items.get(item).copied().unwrap_or(0)
    }

    /// Total number of units across all items.
    pub fn total_units(&self) -> u64 {
        self.items.values().map(|&n| n as u64).sum()
    }

    /// Names of the items with fewer than `threshold` units, in name order.
    pub fn low_stock(&self, threshold: u32) -> Vec<&str> {
        self.items
            .iter()
            .filter(|(_, &n)| n < threshold)
            .map(|(name, _)| name.as_str())
            .collect()
    }

    /// True when no item has any units.
    pub fn is_empty(&self) -> bool {
        self.items.values().all(|&n| n == 0)
    }

    /// Moves every unit of `other` into this inventory.
    pub fn merge(&mut self, other: &Inventory) {
        for (name, &n) in &other.items {
            self.add(name, n);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remove_refuses_overdraw() {
        let mut inv = Inventory::new();
        inv.add("bolt", 3);
        assert_eq!(
            inv.remove("bolt", 5),
            Err(StockError::Insufficient { item: "bolt".into(), available: 3, requested: 5 })
        );
        assert_eq!(inv.remove("bolt", 2), Ok(1));
    }

    #[test]
    fn low_stock_in_name_order() {
        let mut inv = Inventory::new();
        inv.add("nut", 1);
        inv.add("bolt", 0);
        inv.add("gear", 9);
        assert_eq!(inv.low_stock(2), vec!["bolt", "nut"]);
    }
}
