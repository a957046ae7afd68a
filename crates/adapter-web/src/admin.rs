//! The account's members and access tokens: who may do what. Tokens can be created (the secret
//! is shown once, on the answer to the form, never in an address) and deleted by those whose
//! role manages tokens.

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use domain::member::Member;
use domain::query::{Direction, MemberQuery, MemberSortField, Page, Sort};
use domain::role::Role;
use domain::token::{Token, TokenPost};
use maud::{html, Markup};
use serde::Deserialize;
use service::{use_case, CreatedToken, MemberPage, ServiceError, TokenPage};

use crate::pages::{bad_input, count_line, layout, page_of, pager, search_form, search_page_link};
use crate::session;
use crate::signed::{call, check_form, has_control, manages_tokens, Signed};
use crate::text::{encode, free_text, utc};
use crate::{error_page, page, see_other, Console};

/// The roles a new token can have: the token roles up to the caller's own.
fn token_roles(signed: &Signed) -> Vec<Role> {
    [Role::Reader, Role::Writer, Role::Admin]
        .into_iter()
        .filter(|role| *role <= signed.caller.role())
        .collect()
}

/// The members or tokens page's query string.
#[derive(Debug, Deserialize)]
pub(crate) struct ListQuery {
    q: Option<String>,
    page: Option<u64>,
    /// `1` after the delete form's 303: a token was deleted.
    deleted: Option<String>,
}

/// `GET /members`.
pub(crate) async fn members(
    req: HttpRequest,
    console: web::Data<Console>,
    query: web::Query<ListQuery>,
) -> HttpResponse {
    let signed = match session::require(&req, &console).await {
        Ok(signed) => signed,
        Err(answer) => return answer,
    };
    let ListQuery {
        q, page: number, ..
    } = query.into_inner();
    let search = q.map(|q| q.trim().to_owned()).filter(|q| !q.is_empty());
    if search.as_deref().is_some_and(has_control) {
        return bad_input(&signed, "A search must not contain control characters.");
    }
    let (number, page_range) = page_of(number);
    let member_query = MemberQuery {
        query: search.clone(),
        roles: vec![],
        emails: vec![],
        sort: Sort {
            field: MemberSortField::DisplayName,
            direction: Direction::Ascending,
        },
        page: page_range,
    };
    let caller = signed.caller.clone();
    match call(&console, move |s| {
        s.members()
            .list_members(&caller.may(use_case::ListMembers)?, &member_query)
    })
    .await
    {
        Ok(list) => page(
            StatusCode::OK,
            members_page(&signed, &list, search.as_deref(), number),
        ),
        Err(err) => error_page(&err, Some(&signed)),
    }
}

fn display_name(member: &Member) -> String {
    [member.first_name.as_deref(), member.last_name.as_deref()]
        .into_iter()
        .flatten()
        .filter(|n| !n.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The members page.
pub(crate) fn members_page(
    signed: &Signed,
    list: &MemberPage,
    search: Option<&str>,
    number: u64,
) -> Markup {
    let content = html! {
        h1 { "Members" }
        (search_form("/members", "Search members", "email or name", search))
        (count_line(list.total, "member"))
        table {
            thead {
                tr {
                    th scope="col" { "Email" }
                    th scope="col" { "Name" }
                    th scope="col" { "Role" }
                    th scope="col" { "Custom roles" }
                    th scope="col" { "Teams" }
                    th scope="col" { "Status" }
                    th scope="col" { "Last seen" }
                }
            }
            tbody {
                @for member in &list.items {
                    tr {
                        td { (member.email) @if member.id == *signed.caller.member_id() { " " span.badge { "you" } } }
                        td { (display_name(member)) }
                        td { (member.role.as_str()) }
                        td { @for role in &member.custom_roles { span.badge { (role) } " " } }
                        td { @for team in &member.teams { span.badge title=(team.key) { (team.name) } " " } }
                        td {
                            @if member.pending_invite { "invited" }
                            @else if member.verified { "active" }
                            @else { "unverified" }
                        }
                        td { @if member.last_seen > 0 { (utc(member.last_seen)) } @else { span.muted { "never" } } }
                    }
                }
            }
        }
        (pager(list.total, number, |n| search_page_link("/members", search, n)))
    };
    layout("Members", Some(signed), &content)
}

/// The tokens the caller may see: every token where its role allows, else its own and the
/// service tokens (as the API's `showAll`).
async fn load_tokens(
    console: &Console,
    signed: &Signed,
    page_range: Page,
) -> Result<TokenPage, ServiceError> {
    let caller = signed.caller.clone();
    call(console, move |s| {
        match s
            .tokens()
            .list_tokens(&caller.may(use_case::ListTokens)?, page_range, true)
        {
            Err(ServiceError::NotPermitted(_)) => {
                s.tokens()
                    .list_tokens(&caller.may(use_case::ListTokens)?, page_range, false)
            }
            listed => listed,
        }
    })
    .await
}

/// `GET /tokens`.
pub(crate) async fn tokens(
    req: HttpRequest,
    console: web::Data<Console>,
    query: web::Query<ListQuery>,
) -> HttpResponse {
    let signed = match session::require(&req, &console).await {
        Ok(signed) => signed,
        Err(answer) => return answer,
    };
    let ListQuery {
        page: number,
        deleted,
        ..
    } = query.into_inner();
    let (number, page_range) = page_of(number);
    let notice = deleted.map(|_| TokenNotice::Deleted);
    match load_tokens(&console, &signed, page_range).await {
        Ok(list) => page(
            StatusCode::OK,
            tokens_page(&signed, &list, number, notice.as_ref()),
        ),
        Err(err) => error_page(&err, Some(&signed)),
    }
}

/// What the tokens page says on top.
#[derive(Debug)]
pub(crate) enum TokenNotice {
    /// A token was just created: its secret, shown this once.
    Created(Box<CreatedToken>),
    /// A token was deleted.
    Deleted,
    /// A form was refused, and why.
    Problem(String),
}

/// The tokens page: the create form, then the tokens.
pub(crate) fn tokens_page(
    signed: &Signed,
    list: &TokenPage,
    number: u64,
    notice: Option<&TokenNotice>,
) -> Markup {
    let enabled = manages_tokens(signed);
    let content = html! {
        h1 { "Access tokens" }
        @match notice {
            Some(TokenNotice::Created(created)) => {
                section.message.ok role="status" aria-labelledby="new-secret" {
                    h2 #new-secret { "Token " (created.token.name) " was created" }
                    p { "Its secret is shown this once: copy it now and keep it somewhere safe." }
                    p { code #secret.secret { (created.secret) } }
                }
            },
            Some(TokenNotice::Deleted) => p.message.ok role="status" { "The token was deleted." },
            Some(TokenNotice::Problem(text)) => p.message.error role="alert" { (text) },
            None => {},
        }
        details.edit open[matches!(notice, Some(TokenNotice::Problem(_)))] {
            summary { "Create a token" }
            form #create-token method="post" action="/tokens" {
                fieldset disabled[!enabled] {
                    input type="hidden" name="csrf" value=(signed.csrf_token);
                    div.field {
                        label for="token-name" { "Name" }
                        input #token-name type="text" name="name" required maxlength="256";
                    }
                    div.field {
                        label for="token-description" { "Description (optional)" }
                        input #token-description type="text" name="description" maxlength="1000";
                    }
                    div.field {
                        label for="token-role" { "Role (at most your own)" }
                        select #token-role name="role" {
                            @for role in token_roles(signed) {
                                option value=(role.as_str()) selected[role == Role::Reader] { (role.as_str()) }
                            }
                        }
                    }
                    div.field {
                        @if signed.caller.service_token() {
                            // A service token makes only service tokens.
                            input type="hidden" name="service_token" value="true";
                            p.muted { "It will be a service token (it belongs to the account), as the token you signed in with is." }
                        } @else {
                            label.check {
                                input type="checkbox" name="service_token" value="true";
                                " Service token (belongs to the account, not to you)"
                            }
                        }
                    }
                    @if !enabled { p.muted { "Your role does not manage access tokens." } }
                    button type="submit" { "Create token" }
                }
            }
        }
        (count_line(list.total, "token"))
        table {
            thead {
                tr {
                    th scope="col" { "Name" }
                    th scope="col" { "Role" }
                    th scope="col" { "Kind" }
                    th scope="col" { "Secret ends" }
                    th scope="col" { "Created" }
                    th scope="col" { "Last used" }
                    th scope="col" { span.visually-hidden { "Delete" } }
                }
            }
            tbody {
                @for token in &list.items {
                    (token_row(signed, token, enabled))
                }
            }
        }
        (pager(list.total, number, |n| search_page_link("/tokens", None, n)))
    };
    layout("Access tokens", Some(signed), &content)
}

fn token_row(signed: &Signed, token: &Token, enabled: bool) -> Markup {
    let yours = signed.caller.token_id() == Some(&token.id);
    html! {
        tr {
            td {
                (token.name)
                @if yours { " " span.badge title="You are signed in with this token" { "this session" } }
                @if !token.description.is_empty() { br; span.muted { (token.description) } }
            }
            td {
                (token.role.as_str())
                @if !token.custom_role_ids.is_empty() || !token.inline_role.is_empty() { " + custom" }
            }
            td { @if token.service_token { "service" } @else { "personal" } }
            td { code { "…" (token.ending) } }
            td { (utc(token.creation_date)) }
            td { @match token.last_used { Some(at) => (utc(at)), None => span.muted { "never" } } }
            td {
                @if enabled {
                    details {
                        summary { "Delete…" }
                        form method="post" action={ "/tokens/" (encode(token.id.as_str())) "/delete" } {
                            input type="hidden" name="csrf" value=(signed.csrf_token);
                            p {
                                "Requests with this token will be refused"
                                @if yours { ", and this session ends" }
                                "."
                            }
                            button.danger type="submit" { "Delete " (token.name) }
                        }
                    }
                }
            }
        }
    }
}

/// The create-token form.
#[derive(Debug, Deserialize)]
pub(crate) struct CreateTokenForm {
    csrf: Option<String>,
    name: String,
    description: Option<String>,
    role: String,
    /// A ticked checkbox sends `true`; an unticked one nothing.
    service_token: Option<bool>,
}

/// `POST /tokens`: creates a token and shows its secret, once (the answer is this page, not a
/// redirect, so the secret is in no address and no history).
pub(crate) async fn create_token(
    req: HttpRequest,
    console: web::Data<Console>,
    form: web::Form<CreateTokenForm>,
) -> HttpResponse {
    let signed = match session::require(&req, &console).await {
        Ok(signed) => signed,
        Err(answer) => return answer,
    };
    let form = form.into_inner();
    if !check_form(&req, &signed, form.csrf.as_deref()) {
        return session::forged(Some(&signed));
    }
    let name = form.name.trim().to_owned();
    if has_control(&name) || has_control(&form.role) {
        return bad_input(&signed, "A name must not contain control characters.");
    }
    if name.is_empty() {
        return bad_input(
            &signed,
            "Give the token a name: it is how its list tells it apart.",
        );
    }
    let post = TokenPost {
        name: Some(name),
        description: free_text(form.description),
        role: Some(form.role),
        service_token: Some(form.service_token.unwrap_or(false)),
        default_api_version: None,
        custom_role_ids: None,
        inline_role: None,
    };
    let caller = signed.caller.clone();
    let created = call(&console, move |s| {
        let permit = caller.may(use_case::CreateToken)?;
        s.tokens().create_token(&permit, post)
    })
    .await;
    let (status, notice) = match created {
        Ok(created) => (StatusCode::CREATED, TokenNotice::Created(Box::new(created))),
        Err(err @ (ServiceError::Internal(_) | ServiceError::Unavailable(_))) => {
            return error_page(&err, Some(&signed))
        }
        Err(err) => (
            crate::status_of(&err),
            TokenNotice::Problem(format!("No token was created: {err}")),
        ),
    };
    let (_, first_page) = page_of(None);
    match load_tokens(&console, &signed, first_page).await {
        Ok(list) => page(status, tokens_page(&signed, &list, 1, Some(&notice))),
        Err(err) => error_page(&err, Some(&signed)),
    }
}

/// The delete-token form.
#[derive(Debug, Deserialize)]
pub(crate) struct DeleteTokenForm {
    csrf: Option<String>,
}

/// `POST /tokens/{id}/delete`: deletes a token (at once; deleting the session's own token ends
/// the session).
pub(crate) async fn delete_token(
    req: HttpRequest,
    console: web::Data<Console>,
    path: web::Path<String>,
    form: web::Form<DeleteTokenForm>,
) -> HttpResponse {
    let signed = match session::require(&req, &console).await {
        Ok(signed) => signed,
        Err(answer) => return answer,
    };
    if !check_form(&req, &signed, form.csrf.as_deref()) {
        return session::forged(Some(&signed));
    }
    let id = path.into_inner();
    if has_control(&id) {
        return bad_input(&signed, "A token id must not contain control characters.");
    }
    let caller = signed.caller.clone();
    match call(&console, move |s| {
        s.tokens()
            .delete_token(&caller.may(use_case::DeleteToken)?, &id)
    })
    .await
    {
        Ok(()) => see_other("/tokens?deleted=1"),
        Err(err) => error_page(&err, Some(&signed)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::fixture;

    #[test]
    fn the_members_page_lists_each_member_with_role_and_status() {
        let fx = fixture();
        let html = members_page(&fx.reader, &fx.members, None, 1).into_string();
        for text in ["owner@example.com", "<td>owner</td>", "1 member<", "active"] {
            assert!(html.contains(text), "{text}: {html}");
        }
        assert!(
            !html.contains(r#"href="/tokens""#),
            "a reader manages no tokens"
        );
    }

    #[test]
    fn a_new_tokens_secret_is_shown_once_on_the_answer() {
        let fx = fixture();
        let created = CreatedToken {
            token: fx.tokens.items[0].clone(),
            secret: "api-0123456789abcdef".into(),
        };
        let html = tokens_page(
            &fx.owner,
            &fx.tokens,
            1,
            Some(&TokenNotice::Created(Box::new(created))),
        )
        .into_string();
        assert!(
            html.contains(r#"<code class="secret" id="secret">api-0123456789abcdef</code>"#),
            "{html}"
        );
        assert!(html.contains("shown this once"));
        let listed = tokens_page(&fx.owner, &fx.tokens, 1, None).into_string();
        assert!(!listed.contains("api-0123456789abcdef"));
        assert!(listed.contains("2 tokens"));
        assert!(
            listed.contains("this session"),
            "the owner's own token is marked"
        );
        assert_eq!(listed.matches("/delete\"").count(), 2);
        for role in ["reader", "writer", "admin"] {
            assert!(
                listed.contains(&format!(r#"<option value="{role}""#)),
                "{role}"
            );
        }
        assert!(!listed.contains(r#"<option value="owner""#));
    }

    #[test]
    fn a_reader_cannot_create_or_delete_tokens() {
        let fx = fixture();
        let html = tokens_page(&fx.reader, &fx.tokens, 1, None).into_string();
        assert!(html.contains("<fieldset disabled>"));
        assert!(html.contains("does not manage access tokens"));
        assert!(!html.contains("/delete\""));
        assert_eq!(html.matches("<option").count(), 1, "at most a reader");
    }
}
