//! One page of a list: at most [`MAX_PAGE_BYTES`] of JSON, and its paging links.

use actix_web::HttpRequest;
use serde::Serialize;

use crate::wire::link::{Link, Links};

/// The most bytes of JSON the items of one page of a list carry: a page stops at the item that
/// would take it past this (keeping at least one, so that paging always moves on), and its
/// `next` link starts after the last item it holds. Lists of large resources (a flag or a
/// segment may hold megabytes) thus answer in pages of bounded size, whatever `limit` asks.
pub const MAX_PAGE_BYTES: usize = 4 << 20;

/// Cuts `items` after the last one within [`MAX_PAGE_BYTES`] of JSON (the first is always
/// kept): what one page of a list holds.
pub fn within_page_bytes<T: Serialize>(items: &mut Vec<T>) {
    let mut bytes = 0usize;
    let mut keep = items.len();
    for (at, item) in items.iter().enumerate() {
        bytes = bytes.saturating_add(domain::patch::json_len(item));
        if bytes > MAX_PAGE_BYTES && at > 0 {
            keep = at;
            break;
        }
    }
    items.truncate(keep);
}

/// `_links` of one page of a collection at `path`, holding `shown` items from `offset`: `self`,
/// and `first`, `prev`, `next` (after the last item shown), `last` where they exist. Other query
/// parameters (filters, sort) are kept.
pub fn page_links(req: &HttpRequest, limit: u32, offset: u64, shown: usize, total: u64) -> Links {
    let kept: Vec<(String, String)> = form_urlencoded::parse(req.query_string().as_bytes())
        .into_owned()
        .filter(|(name, _)| name != "limit" && name != "offset")
        .collect();
    let href = |offset: u64| {
        let mut query = form_urlencoded::Serializer::new(String::new());
        for (name, value) in &kept {
            query.append_pair(name, value);
        }
        query.append_pair("limit", &limit.to_string());
        query.append_pair("offset", &offset.to_string());
        Link::api(format!("{}?{}", req.path(), query.finish()))
    };
    let limit64 = u64::from(limit.max(1));
    let mut links = Links::from([("self".to_owned(), href(offset))]);
    if offset > 0 {
        links.insert("first".to_owned(), href(0));
        links.insert("prev".to_owned(), href(offset.saturating_sub(limit64)));
    }
    let after = offset.saturating_add(u64::try_from(shown).unwrap_or(u64::MAX));
    if after < total {
        links.insert("next".to_owned(), href(after));
        links.insert("last".to_owned(), href((total - 1) / limit64 * limit64));
    }
    links
}

/// A collection answer: one page of items, its `totalCount` and its paging `_links`. Made only
/// by [`collection`], so that every list caps its page at [`MAX_PAGE_BYTES`] and links it the
/// same way.
pub trait Collection: Sized {
    /// What one item of the page is.
    type Item: Serialize;

    /// The collection of `items`, `total_count` in all, with `links`.
    fn of(links: Links, total_count: u64, items: Vec<Self::Item>) -> Self;
}

/// Implements [`Collection`] for wire types of the form `{items, totalCount, _links}`.
macro_rules! collection_of {
    ($collection:ty, $item:ty) => {
        impl $crate::wire::page::Collection for $collection {
            type Item = $item;

            fn of(links: $crate::wire::link::Links, total_count: u64, items: Vec<$item>) -> Self {
                Self {
                    items,
                    total_count,
                    links,
                }
            }
        }
    };
}
pub(crate) use collection_of;

/// The page of a list at `offset` (`limit` items asked): `items` cut at [`MAX_PAGE_BYTES`], and
/// links to the pages around it out of `total`.
pub fn collection<C: Collection>(
    req: &HttpRequest,
    (limit, offset): (u32, u64),
    mut items: Vec<C::Item>,
    total: u64,
) -> C {
    within_page_bytes(&mut items);
    let links = page_links(req, limit, offset, items.len(), total);
    C::of(links, total, items)
}
