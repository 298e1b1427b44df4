//! `@gatehouse login`: a one-time sign-in link to the console, sent to the author by
//! direct message.
//!
//! The message ingest wants posted is a [`Body::LoginLink`]: who it signs in, with which
//! scopes, for how long. It holds no secret — the notifier mints the link when it posts
//! (`Store::mint_login_link`), so no sign-in secret is ever stored in the clear. The
//! direct message goes to the author's own account: on Slack the channel is the user id
//! (`chat.postMessage` to a user id posts in the app's direct messages with them); on
//! Discord it is `dm:<user id>`, and the notifier opens the direct-message channel first.
//! Both the direct message and the answer in the thread are keyed by the delivery, so a
//! redelivered event sends nothing twice.

use gatehouse_chat::{Body, DM_PREFIX};
use gatehouse_events::Actor;
use gatehouse_store::{Tx, WantChat};

use super::{ChatMention, Platform};
use crate::rights::{Scope, Scopes};
use crate::{ApiError, ApiState};

/// The channel of a direct message to `user` on `platform`, as the notifier reads it;
/// none on GitHub, which has no private messages.
pub(crate) fn direct_channel(platform: Platform, user: &str) -> Option<String> {
    match platform {
        Platform::Slack => Some(user.to_owned()),
        Platform::Discord => Some(format!("{DM_PREFIX}{user}")),
        Platform::Github => None,
    }
}

/// Wants the author's sign-in link sent by direct message; the note for the delivery's
/// record and the answer for the thread.
pub(crate) async fn send_link(
    api: &ApiState,
    tx: &mut Tx,
    delivery: &str,
    m: &ChatMention,
    actor: &Actor,
) -> Result<(String, String), ApiError> {
    // Only a configured person may sign in, as only one may decide a gate.
    let Some(person) = &actor.person else {
        return Ok((
            "login: refused, unknown person".into(),
            format!(
                "`login`: refused: `{}` is not one of the people known to Gatehouse; ask an administrator to add your {} id to [[people]].",
                m.user,
                m.platform.name()
            ),
        ));
    };
    let Some(channel) = direct_channel(m.platform, &m.user) else {
        return Ok((
            "login: refused, no direct messages here".into(),
            "`login`: I can only send a sign-in link by direct message in Slack or Discord; sign in from a terminal with `gatehouse login`.".into(),
        ));
    };
    // Without the console's address a link would lead nowhere.
    if api.console.public_url.is_none() {
        return Ok((
            "login: refused, server.public_url is not configured".into(),
            "`login`: I cannot send you a sign-in link: the console's address is not configured (`server.public_url`). Ask an administrator to set it, or sign in from a terminal with `gatehouse login`.".into(),
        ));
    }
    // What a browser needs day to day; `admin` stays with tokens.
    let scopes = Scopes::of([Scope::Read, Scope::Run, Scope::Decide]).to_stored();
    let body = serde_json::to_string(&Body::LoginLink {
        person: person.clone(),
        scopes,
        ttl_secs: api.console.login_link_ttl.as_secs(),
    })?;
    let key = format!("login:{}:{delivery}", m.platform.name());
    tx.want_chat_message(&WantChat {
        key: &key,
        platform: m.platform.name(),
        channel: &channel,
        thread: None,
        recipient: None,
        run_id: None,
        body: &body,
    })
    .await?;
    Ok((
        format!("login: a sign-in link for {person} goes by direct message"),
        "I sent you a sign-in link by direct message.".into(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn direct_messages_go_to_the_author() {
        assert_eq!(direct_channel(Platform::Slack, "U0ANA").unwrap(), "U0ANA");
        assert_eq!(
            direct_channel(Platform::Discord, "4242").unwrap(),
            "dm:4242"
        );
        assert_eq!(direct_channel(Platform::Github, "ana-gh"), None);
    }
}
