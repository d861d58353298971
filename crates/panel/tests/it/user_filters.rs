//! The users' listing at scale: filtered by status (computed in SQL, held here to the
//! same rules the panel computes each user's status by), by cluster and by name,
//! sorted and paged, with the total the filter names, on SQLite and PostgreSQL.

use std::collections::BTreeSet;

use sqlx::any::AnyPoolOptions;
use switchyard_panel::model::{ResetStrategy, Standing, UserStatus};
use switchyard_panel::store::{Changes, SqlStore, Store, UserInput, UserQuery, UserSort};

const NOW: i64 = 1_796_083_200_000;
const DAY: i64 = 86_400_000;
const STATUSES: [UserStatus; 5] = [
    UserStatus::Active,
    UserStatus::Limited,
    UserStatus::Expired,
    UserStatus::Disabled,
    UserStatus::OnHold,
];

/// A small deterministic generator (the cases are the same on every run).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }
}

async fn story(store: &dyn Store, url: &str) {
    let raw = AnyPoolOptions::new()
        .max_connections(1)
        .connect(url)
        .await
        .unwrap();
    let eu = store.create_cluster("eu", NOW).await.unwrap().id;
    let us = store.create_cluster("us", NOW).await.unwrap().id;
    let mut rng = Lcg(7);
    let mut expected = Vec::new();
    for i in 0..240 {
        let limit = [None, Some(100), Some(1 << 40)][rng.next(3) as usize];
        let hold = [None, None, Some(3)][rng.next(3) as usize];
        let expires = match rng.next(4) {
            0 => None,
            1 => Some(NOW - DAY),
            2 => Some(NOW + DAY),
            _ => Some(NOW),
        };
        let input = UserInput {
            enabled: rng.next(5) != 0,
            traffic_limit: limit,
            reset_strategy: ResetStrategy::None,
            expires_ms: if hold.is_some() { None } else { expires },
            on_hold_days: hold,
            clusters: [None, Some(vec![eu]), Some(vec![us]), Some(vec![])][rng.next(4) as usize]
                .clone(),
            ..UserInput::new(format!("u{i:03}"))
        };
        let made = store
            .create_user(
                &input,
                &switchyard_panel::service::new_credentials(),
                &format!("token-{i:03}-0123456789abcdefghij"),
                NOW,
            )
            .await
            .unwrap();
        let used = [0u64, 50, 100, 150][rng.next(4) as usize];
        let first = match (hold, rng.next(3)) {
            (Some(_), 0) => Some(NOW - 4 * DAY),
            (Some(_), 1) => Some(NOW - DAY),
            _ => None,
        };
        sqlx::query(
            "UPDATE users SET used_up = $1, used_down = $2, first_connected_ms = $3 WHERE id = $4",
        )
        .bind(i64::try_from(used / 2).unwrap())
        .bind(i64::try_from(used - used / 2).unwrap())
        .bind(first)
        .bind(made.id)
        .execute(&raw)
        .await
        .unwrap();
        let status = Standing {
            enabled: input.enabled,
            traffic_limit: limit,
            used,
            expires_ms: input.expires_ms,
            on_hold_days: hold,
            first_connected_ms: first,
        }
        .status(NOW);
        expected.push((
            made.id,
            made.username.clone(),
            status,
            input.clusters.clone(),
            used,
        ));
    }
    let names = |users: &[switchyard_panel::model::User]| -> BTreeSet<String> {
        users.iter().map(|u| u.username.clone()).collect()
    };
    // Each status: exactly the users the panel's own rules give it.
    for status in STATUSES {
        let q = UserQuery {
            status: Some(status),
            limit: Some(1000),
            ..UserQuery::default()
        };
        let (users, total) = store.user_page(&q, None, NOW).await.unwrap();
        let want: BTreeSet<String> = expected
            .iter()
            .filter(|e| e.2 == status)
            .map(|e| e.1.clone())
            .collect();
        assert!(!want.is_empty(), "the cases hold a {status:?} user");
        assert_eq!(names(&users), want, "{status:?}");
        assert_eq!(total, want.len() as u64);
        assert!(users.iter().all(|u| u.status == status));
    }
    // A cluster: its members and the users in every cluster.
    let q = UserQuery {
        cluster: Some(eu),
        limit: Some(1000),
        ..UserQuery::default()
    };
    let want: BTreeSet<String> = expected
        .iter()
        .filter(|e| e.3.as_ref().is_none_or(|c| c.contains(&eu)))
        .map(|e| e.1.clone())
        .collect();
    assert_eq!(
        names(&store.user_page(&q, None, NOW).await.unwrap().0),
        want
    );
    // Sorted by usage, descending, in pages of 50 that cover everyone once.
    let mut seen = Vec::new();
    for page in 0..5 {
        let q = UserQuery {
            sort: Some(UserSort::Usage),
            desc: Some(true),
            limit: Some(50),
            offset: Some(page * 50),
            ..UserQuery::default()
        };
        let (users, total) = store.user_page(&q, None, NOW).await.unwrap();
        assert_eq!(total, 240);
        seen.extend(users.into_iter().map(|u| (u.used_up + u.used_down, u.id)));
    }
    assert_eq!(seen.len(), 240);
    let mut sorted = seen.clone();
    sorted.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    assert_eq!(seen, sorted);
    // Name and status together.
    let q = UserQuery {
        search: Some("u00".into()),
        status: Some(UserStatus::Disabled),
        ..UserQuery::default()
    };
    let want: BTreeSet<String> = expected
        .iter()
        .filter(|e| e.1.starts_with("u00") && e.2 == UserStatus::Disabled)
        .map(|e| e.1.clone())
        .collect();
    let (users, total) = store.user_page(&q, None, NOW).await.unwrap();
    assert_eq!((names(&users), total), (want.clone(), want.len() as u64));
}

#[tokio::test]
async fn statuses_clusters_and_orders_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("panel.db");
    let store = SqlStore::open_sqlite(&db, Changes::default())
        .await
        .unwrap();
    story(&store, &format!("sqlite://{}", db.display())).await;
}

#[tokio::test]
async fn statuses_clusters_and_orders_on_postgres() {
    let pg = switchyard_testkit::Postgres::start().expect("a private PostgreSQL cluster");
    let url = pg.fresh_database("filters").unwrap();
    let store = SqlStore::open(&url, Changes::default()).await.unwrap();
    story(&store, &url).await;
    drop(pg);
}
