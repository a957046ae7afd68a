//! [`InRequest`]: what the middleware tells a connection about its requests (whether one is
//! being handled, how many heads arrived, whether it closes after this answer).

use std::cell::Cell;
use std::rc::Rc;

/// What the middleware tells a connection about its requests (through the connection's data).
#[derive(Debug, Clone, Default)]
pub struct InRequest(pub(crate) Rc<ConnState>);

#[derive(Debug, Default)]
pub(crate) struct ConnState {
    /// A request is being handled (its head has arrived).
    pub(crate) handling: Cell<bool>,
    /// How many request heads have arrived.
    pub(crate) heads: Cell<u64>,
    /// The connection is closed after the current answer (its body timed out).
    pub(crate) closing: Cell<bool>,
}

impl InRequest {
    /// A request's head arrived and it is being handled (`true`), or it was answered (`false`).
    pub fn set(&self, handling: bool) {
        if handling {
            self.0.heads.set(self.0.heads.get().wrapping_add(1));
        }
        self.0.handling.set(handling);
    }

    /// The connection ends after this answer: what it still reads is no request head.
    pub fn closing(&self) {
        self.0.closing.set(true);
    }
}
