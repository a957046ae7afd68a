//! Console sessions: opened with a token's secret, acting as that token, and ended by signing
//! out, by deleting the token, or by resetting its secret.

use serde_json::json;
use service::{use_case, ServiceError};

use crate::{Fixture, OWNER_SECRET};

fn token(fx: &Fixture, role: &str) -> service::CreatedToken {
    let post = serde_json::from_value(json!({"name": "console", "role": role})).unwrap();
    let permit = fx.owner.may(use_case::CreateToken).unwrap();
    fx.service.tokens().create_token(&permit, post).unwrap()
}

#[test]
fn a_session_acts_as_its_token_until_signed_out() {
    let fx = Fixture::new();
    let reader = token(&fx, "reader");
    let opened = fx
        .service
        .console_sessions()
        .open_console_session(&reader.secret)
        .unwrap();
    assert_eq!(opened.id.len(), 64);
    assert_ne!(opened.id, opened.session.csrf_token);
    let found = fx
        .service
        .console_sessions()
        .console_session(&opened.id)
        .unwrap()
        .unwrap();
    assert_eq!(found.caller.token_id(), Some(&reader.token.id));
    assert_eq!(found.caller.role(), domain::role::Role::Reader);
    assert_eq!(found.csrf_token, opened.session.csrf_token);
    // The store keeps the id's hash, never the id.
    let by_id = fx.read(|repo| repo.find_console_session(&opened.id, 0));
    assert_eq!(by_id, None);
    fx.service
        .console_sessions()
        .close_console_session(&opened.id)
        .unwrap();
    assert!(fx
        .service
        .console_sessions()
        .console_session(&opened.id)
        .unwrap()
        .is_none());
    assert!(fx
        .service
        .console_sessions()
        .console_session("not a session")
        .unwrap()
        .is_none());
}

#[test]
fn a_wrong_secret_opens_no_session() {
    let fx = Fixture::new();
    let refused = fx
        .service
        .console_sessions()
        .open_console_session("api-not-a-token");
    assert!(
        matches!(refused, Err(ServiceError::Unauthenticated(_))),
        "{refused:?}"
    );
}

#[test]
fn deleting_the_token_ends_its_sessions() {
    let fx = Fixture::new();
    let writer = token(&fx, "writer");
    let opened = fx
        .service
        .console_sessions()
        .open_console_session(&writer.secret)
        .unwrap();
    let other = fx
        .service
        .console_sessions()
        .open_console_session(OWNER_SECRET)
        .unwrap();
    fx.service
        .tokens()
        .delete_token(
            &fx.owner.may(use_case::DeleteToken).unwrap(),
            writer.token.id.as_str(),
        )
        .unwrap();
    assert!(fx
        .service
        .console_sessions()
        .console_session(&opened.id)
        .unwrap()
        .is_none());
    assert!(fx
        .service
        .console_sessions()
        .console_session(&other.id)
        .unwrap()
        .is_some());
}

#[test]
fn resetting_the_secret_ends_the_sessions_it_opened() {
    let fx = Fixture::new();
    let writer = token(&fx, "writer");
    let opened = fx
        .service
        .console_sessions()
        .open_console_session(&writer.secret)
        .unwrap();
    let reset = fx
        .service
        .tokens()
        .reset_token(
            &fx.owner.may(use_case::ResetToken).unwrap(),
            writer.token.id.as_str(),
            None,
        )
        .unwrap();
    assert!(fx
        .service
        .console_sessions()
        .console_session(&opened.id)
        .unwrap()
        .is_none());
    let again = fx
        .service
        .console_sessions()
        .open_console_session(&reset.secret)
        .unwrap();
    assert!(fx
        .service
        .console_sessions()
        .console_session(&again.id)
        .unwrap()
        .is_some());
}
