//! The tables, as diesel sees them (hand-kept in step with `migrations/`).

diesel::table! {
    members (id) {
        id -> Text,
        email -> Text,
        role -> Text,
        first_name -> Nullable<Text>,
        last_name -> Nullable<Text>,
        creation_date -> BigInt,
        pending_invite -> Bool,
        verified -> Bool,
        last_seen -> BigInt,
        display_name -> Text,
        search -> Text,
        custom_roles -> Text,
        email_key -> Nullable<Text>,
    }
}

diesel::table! {
    tokens (id) {
        id -> Text,
        secret_hash -> Text,
        member_id -> Text,
        name -> Text,
        description -> Text,
        role -> Text,
        service_token -> Bool,
        default_api_version -> Integer,
        creation_date -> BigInt,
        last_modified -> BigInt,
        last_used -> Nullable<BigInt>,
        ending -> Text,
        previous_secret_hash -> Nullable<Text>,
        previous_expires_at -> Nullable<BigInt>,
        custom_role_ids -> Text,
        inline_role -> Text,
    }
}

diesel::table! {
    projects (id) {
        id -> Text,
        key -> Text,
        name -> Text,
        search -> Text,
        include_in_snippet_by_default -> Bool,
        using_mobile_key -> Bool,
        using_environment_id -> Bool,
        creation_date -> BigInt,
        naming_case -> Nullable<Text>,
        naming_prefix -> Nullable<Text>,
    }
}

diesel::table! {
    project_tags (project_id, tag) {
        project_id -> Text,
        tag -> Text,
    }
}

diesel::table! {
    environments (id) {
        id -> Text,
        project_id -> Text,
        key -> Text,
        name -> Text,
        search -> Text,
        api_key -> Text,
        mobile_key -> Text,
        color -> Text,
        default_ttl -> Integer,
        secure_mode -> Bool,
        default_track_events -> Bool,
        require_comments -> Bool,
        confirm_changes -> Bool,
        critical -> Bool,
        creation_date -> BigInt,
    }
}

diesel::table! {
    environment_tags (environment_id, tag) {
        environment_id -> Text,
        tag -> Text,
    }
}

diesel::table! {
    flags (project_id, key) {
        project_id -> Text,
        key -> Text,
        name -> Text,
        search -> Text,
        version -> BigInt,
        creation_date -> BigInt,
        archived -> Bool,
        deprecated -> Bool,
        temporary -> Bool,
        maintainer_id -> Nullable<Text>,
        default_on -> Integer,
        default_off -> Integer,
        settings -> Text,
    }
}

diesel::table! {
    flag_tags (project_id, flag_key, tag) {
        project_id -> Text,
        flag_key -> Text,
        tag -> Text,
    }
}

diesel::table! {
    flag_configs (project_id, flag_key, environment_key) {
        project_id -> Text,
        flag_key -> Text,
        environment_key -> Text,
        config -> Text,
    }
}

diesel::table! {
    flag_prerequisites (project_id, flag_key, environment_key, prerequisite_key) {
        project_id -> Text,
        flag_key -> Text,
        environment_key -> Text,
        prerequisite_key -> Text,
        variation -> Integer,
    }
}

diesel::table! {
    environment_old_keys (key) {
        key -> Text,
        environment_id -> Text,
        kind -> Text,
        expires_at -> BigInt,
    }
}

diesel::table! {
    segments (project_id, environment_key, key) {
        project_id -> Text,
        environment_key -> Text,
        key -> Text,
        name -> Text,
        search -> Text,
        creation_date -> BigInt,
        last_modified -> BigInt,
        version -> BigInt,
        doc -> Text,
    }
}

diesel::table! {
    segment_tags (project_id, environment_key, segment_key, tag) {
        project_id -> Text,
        environment_key -> Text,
        segment_key -> Text,
        tag -> Text,
    }
}

diesel::table! {
    flag_segment_refs (project_id, flag_key, environment_key, segment_key) {
        project_id -> Text,
        flag_key -> Text,
        environment_key -> Text,
        segment_key -> Text,
    }
}

diesel::table! {
    audit_log (id) {
        id -> Text,
        date -> BigInt,
        kind -> Text,
        search -> Text,
        entry -> Text,
    }
}

diesel::table! {
    audit_resources (entry_id, resource) {
        entry_id -> Text,
        resource -> Text,
    }
}

diesel::table! {
    audit_details (entry_id) {
        entry_id -> Text,
        detail -> Text,
    }
}

diesel::table! {
    custom_roles (id) {
        id -> Text,
        key -> Text,
        sort_name -> Text,
        search -> Text,
        creation_date -> BigInt,
        doc -> Text,
    }
}

diesel::table! {
    teams (key) {
        key -> Text,
        name -> Text,
        description -> Text,
        custom_roles -> Text,
        sort_name -> Text,
        search -> Text,
        creation_date -> BigInt,
        last_modified -> BigInt,
        version -> BigInt,
    }
}

diesel::table! {
    team_members (team_key, member_id) {
        team_key -> Text,
        member_id -> Text,
    }
}

diesel::table! {
    webhooks (id) {
        id -> Text,
        creation_date -> BigInt,
        doc -> Text,
    }
}

diesel::table! {
    webhook_deliveries (id) {
        id -> Text,
        webhook_id -> Text,
        entry_id -> Text,
        payload -> Text,
        state -> Text,
        attempts -> Integer,
        next_attempt_at -> BigInt,
        created_at -> BigInt,
        request_id -> Nullable<Text>,
    }
}

diesel::table! {
    webhook_attempts (delivery_id, attempt) {
        delivery_id -> Text,
        webhook_id -> Text,
        entry_id -> Text,
        attempt -> Integer,
        date -> BigInt,
        status_code -> Nullable<Integer>,
        error -> Nullable<Text>,
        duration_ms -> BigInt,
    }
}

diesel::table! {
    account (slot) {
        slot -> Integer,
        id -> Text,
    }
}

diesel::table! {
    console_sessions (id_hash) {
        id_hash -> Text,
        token_id -> Text,
        secret_hash -> Text,
        csrf_token -> Text,
        created_at -> BigInt,
        expires_at -> BigInt,
    }
}

diesel::table! {
    sdk_tombstones (project_id, kind, environment_key, item_key) {
        project_id -> Text,
        kind -> Text,
        environment_key -> Text,
        item_key -> Text,
        version -> BigInt,
    }
}

diesel::joinable!(tokens -> members (member_id));
diesel::joinable!(console_sessions -> tokens (token_id));
diesel::joinable!(team_members -> teams (team_key));
diesel::joinable!(audit_details -> audit_log (entry_id));
diesel::joinable!(webhook_deliveries -> webhooks (webhook_id));

diesel::allow_tables_to_appear_in_same_query!(
    account,
    members,
    tokens,
    projects,
    project_tags,
    environments,
    environment_tags,
    flags,
    flag_tags,
    flag_configs,
    flag_prerequisites,
    environment_old_keys,
    segments,
    segment_tags,
    flag_segment_refs,
    audit_log,
    audit_resources,
    audit_details,
    webhooks,
    custom_roles,
    teams,
    console_sessions,
    team_members,
    webhook_deliveries,
    webhook_attempts,
);
