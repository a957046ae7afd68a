//! The concurrency rule, carried by a type.
//!
//! A use case that reads an object in order to change it holds that object until its
//! transaction ends, so that two concurrent writers never lose each other's change, on any
//! aggregate and on every store. The ports make this the only way to write: every `update_*`,
//! `delete_*` and `reset_*` of an existing object takes a [`Locked`], and only the `lock_*`
//! methods hand one out (PostgreSQL: `SELECT ... FOR UPDATE`; SQLite: write transactions run one
//! at a time). Rules that depend on other rows (one owner, "no role above your own") are checked
//! on objects locked in the same transaction.

/// An object read by a `lock_*` method of [`Repository`](crate::Repository): no other transaction can change it
/// until this one ends. Saving or deleting an existing object takes one of these, so a write
/// cannot forget its lock. It reads as the object it holds (`Deref`).
///
/// ```
/// use ports::Locked;
/// // Only a `Repository` implementation creates one, right after locking the row.
/// let mut held = Locked::assume_locked(String::from("v1"));
/// let before = held.replace(String::from("v2"));
/// assert_eq!((before.as_str(), held.as_str()), ("v1", "v2"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Locked<T>(T);

impl<T> Locked<T> {
    /// Wraps `value`, which the caller has just read under a lock held until the end of the
    /// transaction. For [`Repository`](crate::Repository) implementations only: use cases get a `Locked` from a
    /// `lock_*` method (`cargo xtask check-deps` refuses this call outside the storage adapters).
    pub fn assume_locked(value: T) -> Self {
        Self(value)
    }

    /// Replaces the held state with `next` (the same object, changed), returning the previous.
    pub fn replace(&mut self, next: T) -> T {
        std::mem::replace(&mut self.0, next)
    }

    /// The held state, for changing it in place before saving.
    pub fn get_mut(&mut self) -> &mut T {
        &mut self.0
    }

    /// The object, no longer savable.
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T> std::ops::Deref for Locked<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}
