//! Steps of the script and the session that sends each to every server in turn. A step is a
//! template: `{{name}}` in its path, token or body stands for a value an earlier answer of the
//! same server gave (an `_id`, a token's secret), kept by [`Step::keep`].

use std::collections::HashMap;
use std::net::SocketAddr;

use anyhow::Result;
use serde_json::Value;

use super::server::{self, Answer, Request, OWNER_TOKEN};

pub const JSON: &str = "application/json";
pub const MERGE: &str = "application/merge-patch+json";
pub const SEMANTIC: &str = "application/json; domain-model=svc.semanticpatch";

/// One request of the script, before its placeholders are filled in.
#[derive(Debug, Clone)]
pub struct Step {
    /// What it does, e.g. `flag: turn on in production (semantic)`.
    pub what: String,
    pub method: &'static str,
    pub path: String,
    /// The token's template: the owner's, or `{{name}}` of a kept secret; `None`: no token.
    pub token: Option<String>,
    pub headers: Vec<(String, String)>,
    pub body: Option<(String, String)>,
    /// Values to keep from the JSON answer: (name, JSON pointer).
    pub keeps: Vec<(String, String)>,
}

impl Step {
    fn new(what: &str, method: &'static str, path: &str) -> Step {
        Step {
            what: what.to_owned(),
            method,
            path: path.to_owned(),
            token: Some(OWNER_TOKEN.to_owned()),
            headers: vec![],
            body: None,
            keeps: vec![],
        }
    }

    pub fn get(what: &str, path: &str) -> Step {
        Step::new(what, "GET", path)
    }

    pub fn delete(what: &str, path: &str) -> Step {
        Step::new(what, "DELETE", path)
    }

    /// A POST with a JSON body.
    pub fn post(what: &str, path: &str, body: &Value) -> Step {
        Step::new(what, "POST", path).raw(JSON, &body.to_string())
    }

    /// A PATCH with a JSON body: JSON Patch (an array, or `{comment, patch}`), or `{comment,
    /// merge}`; see [`Step::merge`] and [`Step::semantic`] for the other forms.
    pub fn patch(what: &str, path: &str, body: &Value) -> Step {
        Step::new(what, "PATCH", path).raw(JSON, &body.to_string())
    }

    pub fn merge(what: &str, path: &str, body: &Value) -> Step {
        Step::new(what, "PATCH", path).raw(MERGE, &body.to_string())
    }

    pub fn semantic(what: &str, path: &str, body: &Value) -> Step {
        Step::new(what, "PATCH", path).raw(SEMANTIC, &body.to_string())
    }

    /// Any body with any content type (malformed JSON, text).
    pub fn raw(mut self, content_type: &str, body: &str) -> Step {
        self.body = Some((content_type.to_owned(), body.to_owned()));
        self
    }

    /// Sent with the kept token secret `name` instead of the owner's.
    pub fn by(mut self, name: &str) -> Step {
        self.token = Some(format!("{{{{{name}}}}}"));
        self
    }

    /// Sent with this literal token (an unknown one, a retired one).
    pub fn token(mut self, token: Option<&str>) -> Step {
        self.token = token.map(str::to_owned);
        self
    }

    pub fn header(mut self, name: &str, value: &str) -> Step {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Sent with another method (a 405).
    pub fn method(mut self, method: &'static str) -> Step {
        self.method = method;
        self
    }

    /// Appends a query to the path (`?dryRun=true`).
    pub fn path_suffix(mut self, suffix: &str) -> Step {
        self.path.push_str(suffix);
        self
    }

    /// Keeps the string (or number) at `pointer` of the answer as `{{name}}`.
    pub fn keep(mut self, name: &str, pointer: &str) -> Step {
        self.keeps.push((name.to_owned(), pointer.to_owned()));
        self
    }

    /// How the request reads in a report: `POST /api/v2/tokens as {{reader}}`.
    pub fn describe(&self) -> String {
        let who = match self.token.as_deref() {
            Some(OWNER_TOKEN) => "owner".to_owned(),
            Some(other) => other.trim_matches(|c| c == '{' || c == '}').to_owned(),
            None => "no token".to_owned(),
        };
        let body = self.body.as_ref().map_or(String::new(), |(ct, b)| {
            let b: String = b.chars().take(200).collect();
            format!(" [{ct}] {b}")
        });
        format!("{} {} as {who}{body}", self.method, self.path)
    }
}

/// A step and each server's answer to it, in the order of the servers.
#[derive(Debug)]
pub struct Exchange {
    pub step: Step,
    pub answers: Vec<Answer>,
}

/// Sends every step to each server in turn, filling its placeholders with what that server
/// answered before.
#[derive(Debug)]
pub struct Session {
    targets: Vec<SocketAddr>,
    pub vars: Vec<HashMap<String, String>>,
    pub exchanges: Vec<Exchange>,
}

impl Session {
    pub fn new(targets: Vec<SocketAddr>, vars: Vec<HashMap<String, String>>) -> Session {
        Session {
            targets,
            vars,
            exchanges: vec![],
        }
    }

    /// Sends the step to every server; returns the first server's JSON answer.
    pub fn run(&mut self, step: Step) -> Result<Value> {
        let mut answers = vec![];
        for (address, vars) in self.targets.iter().zip(&mut self.vars) {
            let fill = |text: &str| fill(text, vars);
            let request = Request {
                method: step.method,
                path: fill(&step.path),
                token: step.token.as_deref().map(fill),
                headers: step
                    .headers
                    .iter()
                    .map(|(n, v)| (n.clone(), fill(v)))
                    .collect(),
                body: step.body.as_ref().map(|(ct, b)| (ct.clone(), fill(b))),
            };
            let answer = server::send(*address, &request)?;
            let json = answer.json();
            for (name, pointer) in &step.keeps {
                match json.pointer(pointer) {
                    Some(Value::String(s)) => vars.insert(name.clone(), s.clone()),
                    Some(Value::Number(n)) => vars.insert(name.clone(), n.to_string()),
                    _ => None,
                };
            }
            answers.push(answer);
        }
        let first = answers.first().map(Answer::json).unwrap_or_default();
        self.exchanges.push(Exchange { step, answers });
        Ok(first)
    }

    pub fn run_all(&mut self, steps: Vec<Step>) -> Result<()> {
        for step in steps {
            self.run(step)?;
        }
        Ok(())
    }
}

/// The template with every `{{name}}` known replaced (unknown ones stay, so that the request
/// fails the same way on every server).
fn fill(template: &str, vars: &HashMap<String, String>) -> String {
    let mut text = template.to_owned();
    let mut from = 0;
    while let Some(start) = text[from..].find("{{").map(|at| at + from) {
        let Some(length) = text[start..].find("}}") else {
            break;
        };
        match vars.get(&text[start + 2..start + length]) {
            Some(value) => {
                let value = value.clone();
                text.replace_range(start..start + length + 2, &value);
                from = start + value.len();
            }
            None => from = start + 2,
        }
    }
    text
}
