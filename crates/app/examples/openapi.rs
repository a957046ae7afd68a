//! Prints the OpenAPI document the server serves at `/api/v2/openapi.json`.

fn main() {
    match adapter_http::openapi_document().and_then(|doc| serde_json::to_string_pretty(&doc)) {
        Ok(json) => println!("{json}"),
        Err(err) => {
            eprintln!("cannot serialise the OpenAPI document: {err}");
            std::process::exit(1);
        }
    }
}
