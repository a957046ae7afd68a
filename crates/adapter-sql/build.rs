//! `embed_migrations!` reads `migrations/` at compile time; a new migration must rebuild the crate.

fn main() {
    println!("cargo:rerun-if-changed=migrations");
}
