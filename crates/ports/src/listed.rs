//! One page of a listing.

/// One page of a list query, with the number of all matches (of every page).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed<T> {
    /// The page's items, in the listing's order.
    pub items: Vec<T>,
    /// How many items match the query, over all pages.
    pub total: u64,
}

impl<T> Listed<T> {
    /// A page of `items` out of `total` matches.
    pub fn new(items: Vec<T>, total: u64) -> Self {
        Self { items, total }
    }
}
