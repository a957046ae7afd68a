use domain::IdSource;
use rand::Rng;

/// Random identifiers: UUID v4 strings and hex from the thread's CSPRNG.
#[derive(Debug, Default, Clone, Copy)]
pub struct RandomIds;

impl IdSource for RandomIds {
    fn uuid(&mut self) -> String {
        uuid::Uuid::new_v4().to_string()
    }

    fn hex(&mut self, len: usize) -> String {
        let mut rng = rand::rng();
        (0..len)
            .map(|_| char::from_digit(rng.random_range(0..16), 16).unwrap_or('0'))
            .collect()
    }
}

/// A new `_id`: 24 lowercase hex characters.
pub fn object_id() -> String {
    RandomIds.hex(24)
}
