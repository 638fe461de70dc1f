//! What the client's tests share, here and in `mcp-tests` (whose harness compiles this file
//! too).

use std::sync::{Arc, Mutex};

use mcp_client::{ClientBuilder, ElicitationAnswer, ElicitationRequest};

/// `builder` with an elicitation handler that answers every request with `answer` and records
/// the names of a form's fields in the order the client presents them: the builder and the
/// names.
pub fn recording_form_fields(
    builder: ClientBuilder,
    answer: ElicitationAnswer,
) -> (ClientBuilder, Arc<Mutex<Vec<String>>>) {
    let asked = Arc::new(Mutex::new(Vec::new()));
    let seen = asked.clone();
    let builder = builder.on_elicit(move |request: ElicitationRequest| {
        let seen = seen.clone();
        let answer = answer.clone();
        async move {
            if let ElicitationRequest::Form { schema, .. } = request {
                seen.lock()
                    .unwrap()
                    .extend(schema.fields().iter().map(|f| f.name.clone()));
            }
            Ok(answer)
        }
    });
    (builder, asked)
}
