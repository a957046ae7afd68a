//! Resource specifiers: their grammar (`proj/shop:env/*:flag/*;beta`) and their shape (parts
//! that nest as resources do).

use super::actions;

/// The grammar of [`check_specifier`] as a regular expression (for the OpenAPI document):
/// parts joined by `:`, each `acct` or `kind/name` (a name with at most [`MAX_NAME_GLOBS`]
/// `*`), the last optionally followed by `;tag,tag`.
///
/// ```
/// let specifier = regex::Regex::new(domain::policy::SPECIFIER_PATTERN).unwrap();
/// assert!(specifier.is_match("proj/shop:env/*:flag/*;beta"));
/// assert!(!specifier.is_match("project/shop"));
/// assert!(!specifier.is_match("proj/*a*a*a*a*a*a*a*a*"));
/// assert!(!specifier.is_match("proj/*;beta:env/*"));
/// ```
pub const SPECIFIER_PATTERN: &str = r"^((acct|(proj|env|flag|segment|member|token|webhook|role|team)/([A-Za-z0-9._@+-]+(\*[A-Za-z0-9._@+-]*){0,8}|(\*[A-Za-z0-9._@+-]*){1,8})):)*(acct|(proj|env|flag|segment|member|token|webhook|role|team)/([A-Za-z0-9._@+-]+(\*[A-Za-z0-9._@+-]*){0,8}|(\*[A-Za-z0-9._@+-]*){1,8}))(;[A-Za-z0-9._-]+(,[A-Za-z0-9._-]+)*)?$";

/// What a policy statement's action (or glob of actions) looks like (for the OpenAPI document):
/// letters and `*`; [`Statement::validate`](super::Statement::validate) also checks it names an action of the catalogue.
pub const ACTION_PATTERN: &str = r"^[A-Za-z*]+$";

/// The longest resource specifier of a statement, in characters.
pub const MAX_SPECIFIER_CHARS: usize = 512;

/// The most `*` a name of a resource specifier may hold (`proj/*-eu-*`): matching a glob costs
/// a search per `*`, and a request is decided against every specifier of the caller's roles.
pub const MAX_NAME_GLOBS: usize = 8;

/// The longest action (or glob of actions) of a statement, in characters.
pub const MAX_ACTION_CHARS: usize = 64;

/// The kinds of resource a specifier part may name, and whether each has a name.
const KINDS: [(&str, bool); 10] = [
    ("acct", false),
    ("proj", true),
    ("env", true),
    ("flag", true),
    ("segment", true),
    ("member", true),
    ("token", true),
    ("webhook", true),
    ("role", true),
    ("team", true),
];

/// Checks the syntax of a resource specifier of a policy statement: parts joined by `:`, each
/// `kind/name` (`acct` alone), the kind one of `acct`, `proj`, `env`, `flag`, `segment`,
/// `member`, `token`, `webhook`, `role`, `team`, the name a key or `*` glob (at most
/// [`MAX_NAME_GLOBS`] `*`); the last part optionally followed by `;tag,tag` (a resource is
/// checked for its own tags: a flag's on `flag/…`, a project's on `proj/…`).
///
/// ```
/// use domain::policy::check_specifier;
/// assert!(check_specifier("proj/shop:env/*:flag/*;beta").is_ok());
/// assert!(check_specifier("acct").is_ok());
/// assert!(check_specifier("project/shop").is_err());
/// assert!(check_specifier("proj/shop:").is_err());
/// assert!(check_specifier("proj/{tier:gold}").is_err());
/// ```
///
/// # Errors
/// What is wrong with it.
pub fn check_specifier(spec: &str) -> Result<(), String> {
    check_parts(spec)
}

/// Checks that a (well-formed) specifier's parts name a kind of resource that exists, in the
/// order resources nest (`proj/*:env/*:flag/*`, not `flag/x:proj/p` nor `proj/a:proj/b`): a
/// statement naming nothing would silently allow or deny nothing.
///
/// ```
/// use domain::policy::check_shape;
/// assert!(check_shape("proj/*:env/production:flag/*;beta").is_ok());
/// assert!(check_shape("member/*:token/*").is_ok());
/// assert!(check_shape("flag/x:proj/p").is_err());
/// assert!(check_shape("proj/a:proj/b").is_err());
/// ```
///
/// # Errors
/// A message naming the kinds of resources there are.
pub fn check_shape(spec: &str) -> Result<(), String> {
    let kinds: Vec<&str> = spec
        .split(':')
        .map(|part| {
            let kind_name = part.split(';').next().unwrap_or(part);
            kind_name.split('/').next().unwrap_or(kind_name)
        })
        .collect();
    let exists = actions::ResourceKind::ALL.iter().any(|kind| {
        let shape: Vec<&str> = kind
            .specifier()
            .split(':')
            .map(|part| part.split('/').next().unwrap_or(part))
            .collect();
        shape == kinds
    });
    if exists {
        Ok(())
    } else {
        let shapes: Vec<&str> = actions::ResourceKind::ALL
            .iter()
            .map(|kind| kind.specifier())
            .collect();
        Err(format!(
            "'{spec}' names no resource: its parts must nest as in {}",
            shapes.join(", ")
        ))
    }
}

fn check_parts(spec: &str) -> Result<(), String> {
    if spec.chars().count() > MAX_SPECIFIER_CHARS {
        return Err(format!(
            "a resource specifier has at most {MAX_SPECIFIER_CHARS} characters"
        ));
    }
    let parts = spec.split(':').count();
    for (at, part) in spec.split(':').enumerate() {
        let (kind_name, tags) = match part.split_once(';') {
            Some((kind_name, tags)) => (kind_name, Some(tags)),
            None => (part, None),
        };
        let (kind, name) = match kind_name.split_once('/') {
            Some((kind, name)) => (kind, Some(name)),
            None => (kind_name, None),
        };
        let known = KINDS.iter().find(|(k, _)| *k == kind);
        let Some((_, named)) = known else {
            return Err(format!(
                "'{part}' in '{spec}' is not a resource: expected kind/name with a kind among \
                 acct, proj, env, flag, segment, member, token, webhook, role, team"
            ));
        };
        match name {
            Some(name) if !*named => {
                return Err(format!("'{kind}' has no name ('{name}' in '{spec}')"));
            }
            None if *named => {
                return Err(format!(
                    "'{kind}' needs a name or '*' ('{kind}/*' in '{spec}')"
                ));
            }
            Some(name) if !name_pattern_ok(name) => {
                return Err(format!(
                    "'{name}' in '{spec}' is not a name pattern: letters, digits, '.', '_', '-', \
                     '@', '+' and at most {MAX_NAME_GLOBS} '*' globs"
                ));
            }
            _ => {}
        }
        if let Some(tags) = tags {
            if at + 1 < parts {
                return Err(format!(
                    "';{tags}' in '{spec}': only the last part of a specifier carries tags (a \
                     resource is checked for its own tags, not for its project's or \
                     environment's)"
                ));
            }
            if tags.split(',').any(|t| !tag_ok(t)) {
                return Err(format!(
                    "';{tags}' in '{spec}' is not a list of tags: one or more of letters, digits, '.', '_', '-' joined by ','"
                ));
            }
        }
    }
    Ok(())
}

fn name_pattern_ok(name: &str) -> bool {
    !name.is_empty()
        && name.matches('*').count() <= MAX_NAME_GLOBS
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '*' | '@' | '+'))
}

fn tag_ok(tag: &str) -> bool {
    !tag.is_empty()
        && tag
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}
