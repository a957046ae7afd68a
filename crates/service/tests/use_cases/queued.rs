//! Writes that wait for their turn without a thread (`Service::queue_*`): the changes queued
//! behind one are written by its turn, each with its own outcome.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use domain::flag::FlagPost;
use domain::key::FlagKey;
use serde_json::{json, Value};
use service::{use_case, FlagView, Queued, QueuedWrite, ServiceError, ServiceResult};

use crate::Fixture;

fn poll(queued: &mut QueuedWrite<FlagView>) -> Poll<Queued<FlagView>> {
    Pin::new(queued).poll(&mut Context::from_waker(Waker::noop()))
}

/// Drives `queued` to their outcomes on this one thread: the turns that come are written in
/// the order they come (each writes its lane's batch), until every write is answered.
fn answer_all(mut queued: Vec<Option<QueuedWrite<FlagView>>>) -> Vec<ServiceResult<FlagView>> {
    let mut outcomes: Vec<Option<ServiceResult<FlagView>>> = queued.iter().map(|_| None).collect();
    let mut turns = 0;
    while outcomes.iter().any(Option::is_none) {
        let mut progressed = false;
        for (write, outcome) in queued.iter_mut().zip(&mut outcomes) {
            let Some(pending) = write else { continue };
            match poll(pending) {
                Poll::Pending => continue,
                Poll::Ready(Queued::Answered(answer)) => *outcome = Some(answer),
                Poll::Ready(Queued::Writes(turn)) => {
                    turns += 1;
                    *outcome = Some(turn.write());
                }
            }
            *write = None;
            progressed = true;
        }
        assert!(progressed, "queued writes wait for a turn that never comes");
    }
    // One turn per lane of the project at most: the rest were written in those turns' batches.
    assert!(turns <= 2, "{turns} turns for {} writes", queued.len());
    outcomes.into_iter().flatten().collect()
}

/// Creations queued together in a project of 100 environments: written by the turns of their
/// lanes, in transactions of a few flags each (they would hold every flag's 100 configurations
/// at once otherwise); each gets its own outcome, a key sent twice is taken the second time,
/// and every flag is stored with all its configurations.
#[test]
fn creations_queued_together_in_a_wide_project_are_all_answered() {
    let fx = Fixture::new();
    let environments: Vec<Value> = (0..100)
        .map(|i| json!({"key": format!("env-{i:03}"), "name": format!("Env {i}"), "color": "00AA00"}))
        .collect();
    let post = serde_json::from_value(
        json!({"key": "wide", "name": "Wide", "environments": environments}),
    )
    .unwrap();
    let project_permit = fx.owner.may(use_case::CreateProject).unwrap();
    let project = fx
        .service
        .projects()
        .create_project(&project_permit, post)
        .unwrap()
        .project;
    let permit = fx.owner.may(use_case::CreateFlag).unwrap();
    let keys = ["f-0", "f-1", "f-2", "f-1", "f-3", "f-4", "f-5"];
    let queued = keys
        .iter()
        .map(|key| {
            let post: FlagPost = serde_json::from_value(json!({"key": key, "name": key})).unwrap();
            Some(fx.service.queue_create_flag(&permit, "wide", post))
        })
        .collect();
    let outcomes = answer_all(queued);
    for (i, (key, outcome)) in keys.iter().zip(&outcomes).enumerate() {
        if i == 3 {
            assert!(
                matches!(outcome, Err(ServiceError::KeyTaken(_))),
                "the second f-1: {outcome:?}"
            );
            continue;
        }
        let view = outcome.as_ref().unwrap();
        assert_eq!(view.flag.key.as_str(), *key);
        assert_eq!(view.flag.environments.len(), 100);
        let stored = fx
            .read(|repo| repo.get_flag(&project.id, &FlagKey::parse(key).unwrap()))
            .unwrap();
        assert_eq!(stored, view.flag);
    }
}
