-- The PostgreSQL schema of Remnawave 3.3 as its own Prisma migrations leave it
-- (repository remnawave/backend, prisma/migrations up to 20260815170000_add_shared_lists):
-- the migrations were applied in order to an empty PostgreSQL 15 database and the
-- result dumped with pg_dump --no-owner --no-privileges --no-comments --inserts,
-- then Prisma's own _prisma_migrations table with the migrations' names appended.
-- Remnawave is a Node.js program whose dependencies this machine cannot fetch, so
-- it cannot run in the tests; its users are written by the test (import_remnawave.rs).


SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

SET default_tablespace = '';

SET default_table_access_method = heap;

CREATE TABLE public.admin (
    uuid uuid DEFAULT gen_random_uuid() NOT NULL,
    username text NOT NULL,
    password_hash text NOT NULL,
    role text NOT NULL,
    created_at timestamp(3) without time zone DEFAULT now() NOT NULL,
    updated_at timestamp(3) without time zone DEFAULT now() NOT NULL
);

CREATE TABLE public.api_tokens (
    uuid uuid DEFAULT gen_random_uuid() NOT NULL,
    name text NOT NULL,
    created_at timestamp(3) without time zone DEFAULT now() NOT NULL,
    updated_at timestamp(3) without time zone DEFAULT now() NOT NULL,
    scopes text[] DEFAULT ARRAY['*'::text],
    expire_at timestamp(3) without time zone NOT NULL
);

CREATE TABLE public.config_profile_inbounds (
    uuid uuid DEFAULT gen_random_uuid() NOT NULL,
    profile_uuid uuid NOT NULL,
    tag text NOT NULL,
    type text NOT NULL,
    network text,
    security text,
    port integer,
    raw_inbound jsonb
);

CREATE TABLE public.config_profile_inbounds_to_nodes (
    config_profile_inbound_uuid uuid NOT NULL,
    node_uuid uuid NOT NULL
);

CREATE TABLE public.config_profile_snippets (
    name character varying(255) NOT NULL,
    snippet jsonb NOT NULL,
    created_at timestamp(3) without time zone DEFAULT now() NOT NULL
);

CREATE TABLE public.config_profiles (
    uuid uuid DEFAULT gen_random_uuid() NOT NULL,
    name text NOT NULL,
    config jsonb NOT NULL,
    created_at timestamp(3) without time zone DEFAULT now() NOT NULL,
    updated_at timestamp(3) without time zone DEFAULT now() NOT NULL,
    view_position integer NOT NULL
);

CREATE SEQUENCE public.config_profiles_view_position_seq
    AS integer
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.config_profiles_view_position_seq OWNED BY public.config_profiles.view_position;

CREATE TABLE public.external_squads (
    uuid uuid DEFAULT gen_random_uuid() NOT NULL,
    name character varying(30) NOT NULL,
    created_at timestamp(3) without time zone DEFAULT now() NOT NULL,
    updated_at timestamp(3) without time zone DEFAULT now() NOT NULL,
    subscription_settings jsonb,
    host_overrides jsonb,
    hwid_settings jsonb,
    view_position integer NOT NULL,
    custom_remarks jsonb,
    subpage_config_uuid uuid,
    response_headers_add jsonb DEFAULT '{}'::jsonb NOT NULL,
    response_headers_remove text[] DEFAULT ARRAY[]::text[]
);

CREATE TABLE public.external_squads_templates (
    external_squad_uuid uuid NOT NULL,
    template_uuid uuid NOT NULL,
    template_type text NOT NULL
);

CREATE SEQUENCE public.external_squads_view_position_seq
    AS integer
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.external_squads_view_position_seq OWNED BY public.external_squads.view_position;

CREATE TABLE public.hosts (
    uuid uuid DEFAULT gen_random_uuid() NOT NULL,
    view_position integer NOT NULL,
    remark character varying(100) NOT NULL,
    address text NOT NULL,
    port integer NOT NULL,
    path text,
    sni text,
    host text,
    alpn text,
    fingerprint text,
    is_disabled boolean DEFAULT false NOT NULL,
    security_layer text DEFAULT 'DEFAULT'::text NOT NULL,
    xhttp_extra_params jsonb,
    config_profile_inbound_uuid uuid,
    config_profile_uuid uuid,
    server_description character varying(30),
    mux_params jsonb,
    sockopt_params jsonb,
    is_hidden boolean DEFAULT false NOT NULL,
    override_sni_from_address boolean DEFAULT false NOT NULL,
    vless_route_id integer,
    mihomo_x25519 boolean DEFAULT false NOT NULL,
    shuffle_host boolean DEFAULT false NOT NULL,
    xray_json_template_uuid uuid,
    keep_sni_blank boolean DEFAULT false NOT NULL,
    exclude_from_subscription_types text[] DEFAULT ARRAY[]::text[],
    final_mask jsonb,
    pinned_peer_cert_sha256 text,
    verify_peer_cert_by_name text,
    mihomo_ip_version text,
    tags text[] DEFAULT ARRAY[]::text[],
    mapper jsonb DEFAULT '{}'::jsonb NOT NULL
);

CREATE TABLE public.hosts_to_nodes (
    host_uuid uuid NOT NULL,
    node_uuid uuid NOT NULL
);

CREATE SEQUENCE public.hosts_view_position_seq
    AS integer
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.hosts_view_position_seq OWNED BY public.hosts.view_position;

CREATE TABLE public.hwid_user_devices (
    hwid character varying(64) NOT NULL,
    platform text,
    os_version text,
    device_model text,
    user_agent text,
    created_at timestamp(3) without time zone DEFAULT now() NOT NULL,
    updated_at timestamp(3) without time zone DEFAULT now() NOT NULL,
    user_id bigint NOT NULL,
    request_ip text
);

CREATE TABLE public.infra_billing_history (
    uuid uuid DEFAULT gen_random_uuid() NOT NULL,
    provider_uuid uuid NOT NULL,
    amount double precision NOT NULL,
    billed_at timestamp(3) without time zone NOT NULL
);

CREATE TABLE public.infra_billing_nodes (
    uuid uuid DEFAULT gen_random_uuid() NOT NULL,
    node_uuid uuid,
    provider_uuid uuid NOT NULL,
    next_billing_at timestamp(3) without time zone NOT NULL,
    created_at timestamp(3) without time zone DEFAULT now() NOT NULL,
    updated_at timestamp(3) without time zone DEFAULT now() NOT NULL,
    name text
);

CREATE TABLE public.infra_providers (
    uuid uuid DEFAULT gen_random_uuid() NOT NULL,
    name text NOT NULL,
    favicon_link text,
    login_url text,
    created_at timestamp(3) without time zone DEFAULT now() NOT NULL,
    updated_at timestamp(3) without time zone DEFAULT now() NOT NULL
);

CREATE TABLE public.integrations (
    uuid uuid DEFAULT gen_random_uuid() NOT NULL,
    name character varying(30) NOT NULL,
    description character varying(255),
    config jsonb NOT NULL,
    created_at timestamp(3) without time zone DEFAULT CURRENT_TIMESTAMP NOT NULL,
    updated_at timestamp(3) without time zone DEFAULT CURRENT_TIMESTAMP NOT NULL
);

CREATE TABLE public.internal_squad_host_exclusions (
    host_uuid uuid NOT NULL,
    squad_uuid uuid NOT NULL
);

CREATE TABLE public.internal_squad_inbounds (
    internal_squad_uuid uuid NOT NULL,
    inbound_uuid uuid NOT NULL
);

CREATE TABLE public.internal_squad_members (
    internal_squad_uuid uuid NOT NULL,
    user_id bigint NOT NULL
);

CREATE TABLE public.internal_squads (
    uuid uuid DEFAULT gen_random_uuid() NOT NULL,
    name text NOT NULL,
    created_at timestamp(3) without time zone DEFAULT now() NOT NULL,
    updated_at timestamp(3) without time zone DEFAULT now() NOT NULL,
    view_position integer NOT NULL
);

CREATE SEQUENCE public.internal_squads_view_position_seq
    AS integer
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.internal_squads_view_position_seq OWNED BY public.internal_squads.view_position;

CREATE TABLE public.keygen (
    uuid uuid DEFAULT gen_random_uuid() NOT NULL,
    priv_key text NOT NULL,
    pub_key text NOT NULL,
    created_at timestamp(3) without time zone DEFAULT now() NOT NULL,
    updated_at timestamp(3) without time zone DEFAULT now() NOT NULL,
    ca_cert text,
    ca_key text,
    client_cert text,
    client_key text
);

CREATE TABLE public.node_meta (
    node_id bigint NOT NULL,
    metadata jsonb NOT NULL
);

CREATE TABLE public.node_plugin (
    uuid uuid DEFAULT gen_random_uuid() NOT NULL,
    view_position integer NOT NULL,
    name character varying(255) NOT NULL,
    plugin_config jsonb NOT NULL,
    created_at timestamp(3) without time zone DEFAULT now() NOT NULL,
    updated_at timestamp(3) without time zone DEFAULT now() NOT NULL
);

CREATE SEQUENCE public.node_plugin_view_position_seq
    AS integer
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.node_plugin_view_position_seq OWNED BY public.node_plugin.view_position;

CREATE TABLE public.nodes (
    uuid uuid DEFAULT gen_random_uuid() NOT NULL,
    name text NOT NULL,
    address text NOT NULL,
    port integer,
    is_connected boolean DEFAULT false NOT NULL,
    is_connecting boolean DEFAULT false NOT NULL,
    is_disabled boolean DEFAULT false NOT NULL,
    last_status_change timestamp(3) without time zone,
    last_status_message text,
    is_traffic_tracking_active boolean DEFAULT false NOT NULL,
    traffic_reset_day integer DEFAULT 1,
    traffic_limit_bytes bigint DEFAULT 0,
    traffic_used_bytes bigint DEFAULT 0,
    notify_percent integer DEFAULT 0,
    created_at timestamp(3) without time zone DEFAULT now() NOT NULL,
    updated_at timestamp(3) without time zone DEFAULT now() NOT NULL,
    view_position integer NOT NULL,
    country_code text DEFAULT 'XX'::text NOT NULL,
    consumption_multiplier bigint DEFAULT 1000000000 NOT NULL,
    active_config_profile_uuid uuid,
    provider_uuid uuid,
    id bigint NOT NULL,
    tags text[] DEFAULT ARRAY[]::text[],
    active_plugin_uuid uuid,
    note character varying(255),
    proxy_url text,
    node_consumption_multiplier bigint DEFAULT 1000000000 NOT NULL,
    ips jsonb DEFAULT '[]'::jsonb NOT NULL,
    integration_uuids uuid[] DEFAULT ARRAY[]::uuid[]
);

CREATE SEQUENCE public.nodes_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.nodes_id_seq OWNED BY public.nodes.id;

CREATE TABLE public.nodes_usage_history (
    node_uuid uuid NOT NULL,
    download_bytes bigint NOT NULL,
    upload_bytes bigint NOT NULL,
    total_bytes bigint NOT NULL,
    created_at timestamp(3) without time zone DEFAULT date_trunc('hour'::text, now()) NOT NULL,
    updated_at timestamp(3) without time zone DEFAULT now() NOT NULL
);

CREATE TABLE public.nodes_user_usage_history (
    node_id bigint NOT NULL,
    user_id bigint NOT NULL,
    total_bytes bigint NOT NULL,
    created_at date DEFAULT CURRENT_DATE NOT NULL,
    updated_at timestamp(3) without time zone DEFAULT now() NOT NULL
);

CREATE SEQUENCE public.nodes_view_position_seq
    AS integer
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.nodes_view_position_seq OWNED BY public.nodes.view_position;

CREATE TABLE public.passkeys (
    id text NOT NULL,
    admin_uuid uuid NOT NULL,
    public_key bytea NOT NULL,
    counter bigint NOT NULL,
    device_type text NOT NULL,
    backed_up boolean NOT NULL,
    transports text,
    passkey_provider text,
    created_at timestamp(3) without time zone DEFAULT now() NOT NULL,
    updated_at timestamp(3) without time zone DEFAULT now() NOT NULL
);

CREATE TABLE public.remnawave_settings (
    id integer DEFAULT 1 NOT NULL,
    passkey_settings jsonb,
    oauth2_settings jsonb,
    password_settings jsonb,
    branding_settings jsonb
);

CREATE TABLE public.shared_lists (
    name character varying(255) NOT NULL,
    config jsonb NOT NULL,
    created_at timestamp(3) without time zone DEFAULT CURRENT_TIMESTAMP NOT NULL,
    updated_at timestamp(3) without time zone DEFAULT CURRENT_TIMESTAMP NOT NULL
);

CREATE TABLE public.subscription_page_config (
    uuid uuid DEFAULT gen_random_uuid() NOT NULL,
    view_position integer NOT NULL,
    name character varying(30) NOT NULL,
    config jsonb NOT NULL,
    created_at timestamp(3) without time zone DEFAULT now() NOT NULL,
    updated_at timestamp(3) without time zone DEFAULT now() NOT NULL
);

CREATE SEQUENCE public.subscription_page_config_view_position_seq
    AS integer
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.subscription_page_config_view_position_seq OWNED BY public.subscription_page_config.view_position;

CREATE TABLE public.subscription_settings (
    uuid uuid DEFAULT gen_random_uuid() NOT NULL,
    created_at timestamp(3) without time zone DEFAULT now() NOT NULL,
    updated_at timestamp(3) without time zone DEFAULT now() NOT NULL,
    serve_json_at_base_subscription boolean DEFAULT false NOT NULL,
    is_show_custom_remarks boolean DEFAULT true NOT NULL,
    custom_response_headers jsonb,
    randomize_hosts boolean DEFAULT false NOT NULL,
    response_rules jsonb,
    hwid_settings jsonb,
    custom_remarks jsonb NOT NULL
);

CREATE TABLE public.subscription_templates (
    uuid uuid DEFAULT gen_random_uuid() NOT NULL,
    template_type text NOT NULL,
    template_yaml text,
    template_json jsonb,
    created_at timestamp(3) without time zone DEFAULT now() NOT NULL,
    updated_at timestamp(3) without time zone DEFAULT now() NOT NULL,
    name character varying(255) DEFAULT 'Default'::character varying NOT NULL,
    view_position integer NOT NULL
);

CREATE SEQUENCE public.subscription_templates_view_position_seq
    AS integer
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.subscription_templates_view_position_seq OWNED BY public.subscription_templates.view_position;

CREATE TABLE public.torrent_blocker_reports (
    id bigint NOT NULL,
    user_id bigint NOT NULL,
    node_id bigint NOT NULL,
    report jsonb NOT NULL,
    created_at timestamp(3) without time zone DEFAULT now() NOT NULL
);

CREATE SEQUENCE public.torrent_blocker_reports_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.torrent_blocker_reports_id_seq OWNED BY public.torrent_blocker_reports.id;

CREATE TABLE public.user_meta (
    user_id bigint NOT NULL,
    metadata jsonb NOT NULL
);

CREATE TABLE public.user_subscription_request_history (
    id bigint NOT NULL,
    request_ip text,
    user_agent text,
    request_at timestamp(3) without time zone DEFAULT now() NOT NULL,
    user_id bigint NOT NULL,
    srr_response_type text DEFAULT 'UNKNOWN'::text NOT NULL,
    srr_rule_name text
);

CREATE SEQUENCE public.user_subscription_request_history_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.user_subscription_request_history_id_seq OWNED BY public.user_subscription_request_history.id;

CREATE TABLE public.user_traffic (
    id bigint NOT NULL,
    used_traffic_bytes bigint DEFAULT 0 NOT NULL,
    lifetime_used_traffic_bytes bigint DEFAULT 0 NOT NULL,
    online_at timestamp(3) without time zone,
    last_connected_node_uuid uuid,
    first_connected_at timestamp(3) without time zone
);

CREATE TABLE public.users (
    short_uuid text NOT NULL,
    username text NOT NULL,
    status character varying(10) DEFAULT 'ACTIVE'::text NOT NULL,
    traffic_limit_bytes bigint DEFAULT 0 NOT NULL,
    traffic_limit_strategy text DEFAULT 'NO_RESET'::text NOT NULL,
    expire_at timestamp(3) without time zone NOT NULL,
    sub_revoked_at timestamp(3) without time zone,
    last_traffic_reset_at timestamp(3) without time zone,
    trojan_password text NOT NULL,
    vless_uuid uuid NOT NULL,
    ss_password text NOT NULL,
    created_at timestamp(3) without time zone DEFAULT now() NOT NULL,
    updated_at timestamp(3) without time zone DEFAULT now() NOT NULL,
    description text,
    email text,
    telegram_id bigint,
    hwid_device_limit integer,
    tag text,
    last_triggered_threshold integer DEFAULT 0 NOT NULL,
    id bigint NOT NULL,
    external_squad_uuid uuid
);

CREATE SEQUENCE public.users_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.users_id_seq OWNED BY public.users.id;

ALTER TABLE ONLY public.config_profiles ALTER COLUMN view_position SET DEFAULT nextval('public.config_profiles_view_position_seq'::regclass);

ALTER TABLE ONLY public.external_squads ALTER COLUMN view_position SET DEFAULT nextval('public.external_squads_view_position_seq'::regclass);

ALTER TABLE ONLY public.hosts ALTER COLUMN view_position SET DEFAULT nextval('public.hosts_view_position_seq'::regclass);

ALTER TABLE ONLY public.internal_squads ALTER COLUMN view_position SET DEFAULT nextval('public.internal_squads_view_position_seq'::regclass);

ALTER TABLE ONLY public.node_plugin ALTER COLUMN view_position SET DEFAULT nextval('public.node_plugin_view_position_seq'::regclass);

ALTER TABLE ONLY public.nodes ALTER COLUMN view_position SET DEFAULT nextval('public.nodes_view_position_seq'::regclass);

ALTER TABLE ONLY public.nodes ALTER COLUMN id SET DEFAULT nextval('public.nodes_id_seq'::regclass);

ALTER TABLE ONLY public.subscription_page_config ALTER COLUMN view_position SET DEFAULT nextval('public.subscription_page_config_view_position_seq'::regclass);

ALTER TABLE ONLY public.subscription_templates ALTER COLUMN view_position SET DEFAULT nextval('public.subscription_templates_view_position_seq'::regclass);

ALTER TABLE ONLY public.torrent_blocker_reports ALTER COLUMN id SET DEFAULT nextval('public.torrent_blocker_reports_id_seq'::regclass);

ALTER TABLE ONLY public.user_subscription_request_history ALTER COLUMN id SET DEFAULT nextval('public.user_subscription_request_history_id_seq'::regclass);

ALTER TABLE ONLY public.users ALTER COLUMN id SET DEFAULT nextval('public.users_id_seq'::regclass);

INSERT INTO public.internal_squads VALUES ('dc3334d2-5f2b-4843-8bda-edba7ec8dd78', 'Default-Squad', '2026-12-04 21:51:29.634', '2026-12-04 21:51:29.634', 1);

SELECT pg_catalog.setval('public.config_profiles_view_position_seq', 1, false);

SELECT pg_catalog.setval('public.external_squads_view_position_seq', 1, false);

SELECT pg_catalog.setval('public.hosts_view_position_seq', 1, false);

SELECT pg_catalog.setval('public.internal_squads_view_position_seq', 1, true);

SELECT pg_catalog.setval('public.node_plugin_view_position_seq', 1, false);

SELECT pg_catalog.setval('public.nodes_id_seq', 1, false);

SELECT pg_catalog.setval('public.nodes_view_position_seq', 1, false);

SELECT pg_catalog.setval('public.subscription_page_config_view_position_seq', 1, false);

SELECT pg_catalog.setval('public.subscription_templates_view_position_seq', 1, false);

SELECT pg_catalog.setval('public.torrent_blocker_reports_id_seq', 1, false);

SELECT pg_catalog.setval('public.user_subscription_request_history_id_seq', 1, false);

SELECT pg_catalog.setval('public.users_id_seq', 1, true);

ALTER TABLE ONLY public.admin
    ADD CONSTRAINT admin_pkey PRIMARY KEY (uuid);

ALTER TABLE ONLY public.api_tokens
    ADD CONSTRAINT api_tokens_pkey PRIMARY KEY (uuid);

ALTER TABLE ONLY public.config_profile_inbounds
    ADD CONSTRAINT config_profile_inbounds_pkey PRIMARY KEY (uuid);

ALTER TABLE ONLY public.config_profile_inbounds_to_nodes
    ADD CONSTRAINT config_profile_inbounds_to_nodes_pkey PRIMARY KEY (config_profile_inbound_uuid, node_uuid);

ALTER TABLE ONLY public.config_profile_snippets
    ADD CONSTRAINT config_profile_snippets_pkey PRIMARY KEY (name);

ALTER TABLE ONLY public.config_profiles
    ADD CONSTRAINT config_profiles_pkey PRIMARY KEY (uuid);

ALTER TABLE ONLY public.external_squads
    ADD CONSTRAINT external_squads_pkey PRIMARY KEY (uuid);

ALTER TABLE ONLY public.external_squads_templates
    ADD CONSTRAINT external_squads_templates_pkey PRIMARY KEY (external_squad_uuid, template_type);

ALTER TABLE ONLY public.hosts
    ADD CONSTRAINT hosts_pkey PRIMARY KEY (uuid);

ALTER TABLE ONLY public.hosts_to_nodes
    ADD CONSTRAINT hosts_to_nodes_pkey PRIMARY KEY (host_uuid, node_uuid);

ALTER TABLE ONLY public.hwid_user_devices
    ADD CONSTRAINT hwid_user_devices_pkey PRIMARY KEY (hwid, user_id);

ALTER TABLE ONLY public.infra_billing_history
    ADD CONSTRAINT infra_billing_history_pkey PRIMARY KEY (uuid);

ALTER TABLE ONLY public.infra_billing_nodes
    ADD CONSTRAINT infra_billing_nodes_pkey PRIMARY KEY (uuid);

ALTER TABLE ONLY public.infra_providers
    ADD CONSTRAINT infra_providers_pkey PRIMARY KEY (uuid);

ALTER TABLE ONLY public.integrations
    ADD CONSTRAINT integrations_pkey PRIMARY KEY (uuid);

ALTER TABLE ONLY public.internal_squad_host_exclusions
    ADD CONSTRAINT internal_squad_host_exclusions_pkey PRIMARY KEY (host_uuid, squad_uuid);

ALTER TABLE ONLY public.internal_squad_inbounds
    ADD CONSTRAINT internal_squad_inbounds_pkey PRIMARY KEY (internal_squad_uuid, inbound_uuid);

ALTER TABLE ONLY public.internal_squad_members
    ADD CONSTRAINT internal_squad_members_pkey PRIMARY KEY (internal_squad_uuid, user_id);

ALTER TABLE ONLY public.internal_squads
    ADD CONSTRAINT internal_squads_pkey PRIMARY KEY (uuid);

ALTER TABLE ONLY public.keygen
    ADD CONSTRAINT keygen_pkey PRIMARY KEY (uuid);

ALTER TABLE ONLY public.node_meta
    ADD CONSTRAINT node_meta_pkey PRIMARY KEY (node_id);

ALTER TABLE ONLY public.node_plugin
    ADD CONSTRAINT node_plugin_pkey PRIMARY KEY (uuid);

ALTER TABLE ONLY public.nodes
    ADD CONSTRAINT nodes_pkey PRIMARY KEY (uuid);

ALTER TABLE ONLY public.nodes_usage_history
    ADD CONSTRAINT nodes_usage_history_pkey PRIMARY KEY (node_uuid, created_at);

ALTER TABLE ONLY public.nodes_user_usage_history
    ADD CONSTRAINT nodes_user_usage_history_pkey PRIMARY KEY (node_id, created_at, user_id);

ALTER TABLE ONLY public.passkeys
    ADD CONSTRAINT passkeys_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.remnawave_settings
    ADD CONSTRAINT remnawave_settings_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.shared_lists
    ADD CONSTRAINT shared_lists_pkey PRIMARY KEY (name);

ALTER TABLE ONLY public.subscription_page_config
    ADD CONSTRAINT subscription_page_config_pkey PRIMARY KEY (uuid);

ALTER TABLE ONLY public.subscription_settings
    ADD CONSTRAINT subscription_settings_pkey PRIMARY KEY (uuid);

ALTER TABLE ONLY public.subscription_templates
    ADD CONSTRAINT subscription_templates_pkey PRIMARY KEY (uuid);

ALTER TABLE ONLY public.torrent_blocker_reports
    ADD CONSTRAINT torrent_blocker_reports_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.user_meta
    ADD CONSTRAINT user_meta_pkey PRIMARY KEY (user_id);

ALTER TABLE ONLY public.user_subscription_request_history
    ADD CONSTRAINT user_subscription_request_history_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.user_traffic
    ADD CONSTRAINT user_traffic_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.users
    ADD CONSTRAINT users_pkey PRIMARY KEY (id);

CREATE UNIQUE INDEX admin_username_key ON public.admin USING btree (username);

CREATE INDEX config_profile_inbounds_profile_uuid_uuid_idx ON public.config_profile_inbounds USING btree (profile_uuid, uuid);

CREATE UNIQUE INDEX config_profile_inbounds_tag_key ON public.config_profile_inbounds USING btree (tag);

CREATE UNIQUE INDEX config_profiles_name_key ON public.config_profiles USING btree (name);

CREATE UNIQUE INDEX external_squads_name_key ON public.external_squads USING btree (name);

CREATE INDEX hwid_user_devices_user_id_idx ON public.hwid_user_devices USING btree (user_id);

CREATE INDEX infra_billing_nodes_next_billing_at_idx ON public.infra_billing_nodes USING btree (next_billing_at);

CREATE UNIQUE INDEX infra_billing_nodes_node_uuid_provider_uuid_key ON public.infra_billing_nodes USING btree (node_uuid, provider_uuid);

CREATE UNIQUE INDEX infra_providers_name_key ON public.infra_providers USING btree (name);

CREATE UNIQUE INDEX integrations_name_key ON public.integrations USING btree (name);

CREATE INDEX internal_squad_members_internal_squad_uuid_idx ON public.internal_squad_members USING btree (internal_squad_uuid);

CREATE INDEX internal_squad_members_user_id_idx ON public.internal_squad_members USING btree (user_id);

CREATE UNIQUE INDEX internal_squads_name_key ON public.internal_squads USING btree (name);

CREATE UNIQUE INDEX nodes_address_key ON public.nodes USING btree (address);

CREATE INDEX nodes_id_idx ON public.nodes USING btree (id);

CREATE UNIQUE INDEX nodes_id_key ON public.nodes USING btree (id);

CREATE UNIQUE INDEX nodes_name_key ON public.nodes USING btree (name);

CREATE INDEX nodes_usage_history_node_uuid_created_at_idx ON public.nodes_usage_history USING btree (node_uuid, created_at DESC);

CREATE INDEX nodes_user_usage_history_user_id_created_at_idx ON public.nodes_user_usage_history USING btree (user_id, created_at);

CREATE INDEX passkeys_admin_uuid_idx ON public.passkeys USING btree (admin_uuid);

CREATE INDEX passkeys_id_idx ON public.passkeys USING btree (id);

CREATE UNIQUE INDEX subscription_page_config_name_key ON public.subscription_page_config USING btree (name);

CREATE UNIQUE INDEX subscription_templates_template_type_name_key ON public.subscription_templates USING btree (template_type, name);

CREATE INDEX user_subscription_request_history_user_id_idx ON public.user_subscription_request_history USING btree (user_id);

CREATE INDEX users_active_config_idx ON public.users USING btree (id) INCLUDE (vless_uuid, trojan_password, ss_password) WHERE ((status)::text = 'ACTIVE'::text);

CREATE INDEX users_expire_at_idx ON public.users USING btree (expire_at);

CREATE INDEX users_external_squad_uuid_idx ON public.users USING btree (external_squad_uuid) WHERE (external_squad_uuid IS NOT NULL);

CREATE INDEX users_pending_expire_idx ON public.users USING btree (expire_at) WHERE ((status)::text = ANY ((ARRAY['ACTIVE'::character varying, 'LIMITED'::character varying])::text[]));

CREATE UNIQUE INDEX users_short_uuid_key ON public.users USING btree (short_uuid);

CREATE INDEX users_telegram_id_idx ON public.users USING btree (telegram_id) WHERE (telegram_id IS NOT NULL);

CREATE UNIQUE INDEX users_username_key ON public.users USING btree (username);

ALTER TABLE ONLY public.config_profile_inbounds
    ADD CONSTRAINT config_profile_inbounds_profile_uuid_fkey FOREIGN KEY (profile_uuid) REFERENCES public.config_profiles(uuid) ON UPDATE CASCADE ON DELETE CASCADE;

ALTER TABLE ONLY public.config_profile_inbounds_to_nodes
    ADD CONSTRAINT config_profile_inbounds_to_nodes_config_profile_inbound_uu_fkey FOREIGN KEY (config_profile_inbound_uuid) REFERENCES public.config_profile_inbounds(uuid) ON UPDATE CASCADE ON DELETE CASCADE;

ALTER TABLE ONLY public.config_profile_inbounds_to_nodes
    ADD CONSTRAINT config_profile_inbounds_to_nodes_node_uuid_fkey FOREIGN KEY (node_uuid) REFERENCES public.nodes(uuid) ON UPDATE CASCADE ON DELETE CASCADE;

ALTER TABLE ONLY public.external_squads
    ADD CONSTRAINT external_squads_subpage_config_uuid_fkey FOREIGN KEY (subpage_config_uuid) REFERENCES public.subscription_page_config(uuid) ON UPDATE CASCADE ON DELETE SET NULL;

ALTER TABLE ONLY public.external_squads_templates
    ADD CONSTRAINT external_squads_templates_external_squad_uuid_fkey FOREIGN KEY (external_squad_uuid) REFERENCES public.external_squads(uuid) ON UPDATE CASCADE ON DELETE CASCADE;

ALTER TABLE ONLY public.external_squads_templates
    ADD CONSTRAINT external_squads_templates_template_uuid_fkey FOREIGN KEY (template_uuid) REFERENCES public.subscription_templates(uuid) ON UPDATE CASCADE ON DELETE CASCADE;

ALTER TABLE ONLY public.hosts
    ADD CONSTRAINT hosts_config_profile_inbound_uuid_fkey FOREIGN KEY (config_profile_inbound_uuid) REFERENCES public.config_profile_inbounds(uuid) ON UPDATE CASCADE ON DELETE SET NULL;

ALTER TABLE ONLY public.hosts
    ADD CONSTRAINT hosts_config_profile_uuid_fkey FOREIGN KEY (config_profile_uuid) REFERENCES public.config_profiles(uuid) ON UPDATE CASCADE ON DELETE SET NULL;

ALTER TABLE ONLY public.hosts_to_nodes
    ADD CONSTRAINT hosts_to_nodes_host_uuid_fkey FOREIGN KEY (host_uuid) REFERENCES public.hosts(uuid) ON UPDATE CASCADE ON DELETE CASCADE;

ALTER TABLE ONLY public.hosts_to_nodes
    ADD CONSTRAINT hosts_to_nodes_node_uuid_fkey FOREIGN KEY (node_uuid) REFERENCES public.nodes(uuid) ON UPDATE CASCADE ON DELETE CASCADE;

ALTER TABLE ONLY public.hosts
    ADD CONSTRAINT hosts_xray_json_template_uuid_fkey FOREIGN KEY (xray_json_template_uuid) REFERENCES public.subscription_templates(uuid) ON UPDATE CASCADE ON DELETE SET NULL;

ALTER TABLE ONLY public.hwid_user_devices
    ADD CONSTRAINT hwid_user_devices_user_id_fkey FOREIGN KEY (user_id) REFERENCES public.users(id) ON UPDATE CASCADE ON DELETE CASCADE;

ALTER TABLE ONLY public.infra_billing_history
    ADD CONSTRAINT infra_billing_history_provider_uuid_fkey FOREIGN KEY (provider_uuid) REFERENCES public.infra_providers(uuid) ON UPDATE CASCADE ON DELETE CASCADE;

ALTER TABLE ONLY public.infra_billing_nodes
    ADD CONSTRAINT infra_billing_nodes_node_uuid_fkey FOREIGN KEY (node_uuid) REFERENCES public.nodes(uuid) ON UPDATE CASCADE ON DELETE CASCADE;

ALTER TABLE ONLY public.infra_billing_nodes
    ADD CONSTRAINT infra_billing_nodes_provider_uuid_fkey FOREIGN KEY (provider_uuid) REFERENCES public.infra_providers(uuid) ON UPDATE CASCADE ON DELETE CASCADE;

ALTER TABLE ONLY public.internal_squad_host_exclusions
    ADD CONSTRAINT internal_squad_host_exclusions_host_uuid_fkey FOREIGN KEY (host_uuid) REFERENCES public.hosts(uuid) ON UPDATE CASCADE ON DELETE CASCADE;

ALTER TABLE ONLY public.internal_squad_host_exclusions
    ADD CONSTRAINT internal_squad_host_exclusions_squad_uuid_fkey FOREIGN KEY (squad_uuid) REFERENCES public.internal_squads(uuid) ON UPDATE CASCADE ON DELETE CASCADE;

ALTER TABLE ONLY public.internal_squad_inbounds
    ADD CONSTRAINT internal_squad_inbounds_inbound_uuid_fkey FOREIGN KEY (inbound_uuid) REFERENCES public.config_profile_inbounds(uuid) ON UPDATE CASCADE ON DELETE CASCADE;

ALTER TABLE ONLY public.internal_squad_inbounds
    ADD CONSTRAINT internal_squad_inbounds_internal_squad_uuid_fkey FOREIGN KEY (internal_squad_uuid) REFERENCES public.internal_squads(uuid) ON UPDATE CASCADE ON DELETE CASCADE;

ALTER TABLE ONLY public.internal_squad_members
    ADD CONSTRAINT internal_squad_members_internal_squad_uuid_fkey FOREIGN KEY (internal_squad_uuid) REFERENCES public.internal_squads(uuid) ON UPDATE CASCADE ON DELETE CASCADE;

ALTER TABLE ONLY public.internal_squad_members
    ADD CONSTRAINT internal_squad_members_user_id_fkey FOREIGN KEY (user_id) REFERENCES public.users(id) ON UPDATE CASCADE ON DELETE CASCADE;

ALTER TABLE ONLY public.node_meta
    ADD CONSTRAINT node_meta_node_id_fkey FOREIGN KEY (node_id) REFERENCES public.nodes(id) ON UPDATE CASCADE ON DELETE CASCADE;

ALTER TABLE ONLY public.nodes
    ADD CONSTRAINT nodes_active_config_profile_uuid_fkey FOREIGN KEY (active_config_profile_uuid) REFERENCES public.config_profiles(uuid) ON UPDATE CASCADE ON DELETE SET NULL;

ALTER TABLE ONLY public.nodes
    ADD CONSTRAINT nodes_active_plugin_uuid_fkey FOREIGN KEY (active_plugin_uuid) REFERENCES public.node_plugin(uuid) ON UPDATE CASCADE ON DELETE SET NULL;

ALTER TABLE ONLY public.nodes
    ADD CONSTRAINT nodes_provider_uuid_fkey FOREIGN KEY (provider_uuid) REFERENCES public.infra_providers(uuid) ON UPDATE CASCADE ON DELETE SET NULL;

ALTER TABLE ONLY public.nodes_usage_history
    ADD CONSTRAINT nodes_usage_history_node_uuid_fkey FOREIGN KEY (node_uuid) REFERENCES public.nodes(uuid) ON UPDATE CASCADE ON DELETE CASCADE;

ALTER TABLE ONLY public.nodes_user_usage_history
    ADD CONSTRAINT nodes_user_usage_history_node_id_fkey FOREIGN KEY (node_id) REFERENCES public.nodes(id) ON UPDATE CASCADE ON DELETE CASCADE;

ALTER TABLE ONLY public.nodes_user_usage_history
    ADD CONSTRAINT nodes_user_usage_history_user_id_fkey FOREIGN KEY (user_id) REFERENCES public.users(id) ON UPDATE CASCADE ON DELETE CASCADE;

ALTER TABLE ONLY public.passkeys
    ADD CONSTRAINT passkeys_admin_uuid_fkey FOREIGN KEY (admin_uuid) REFERENCES public.admin(uuid) ON UPDATE CASCADE ON DELETE CASCADE;

ALTER TABLE ONLY public.torrent_blocker_reports
    ADD CONSTRAINT torrent_blocker_reports_node_id_fkey FOREIGN KEY (node_id) REFERENCES public.nodes(id) ON UPDATE CASCADE ON DELETE CASCADE;

ALTER TABLE ONLY public.torrent_blocker_reports
    ADD CONSTRAINT torrent_blocker_reports_user_id_fkey FOREIGN KEY (user_id) REFERENCES public.users(id) ON UPDATE CASCADE ON DELETE CASCADE;

ALTER TABLE ONLY public.user_meta
    ADD CONSTRAINT user_meta_user_id_fkey FOREIGN KEY (user_id) REFERENCES public.users(id) ON UPDATE CASCADE ON DELETE CASCADE;

ALTER TABLE ONLY public.user_subscription_request_history
    ADD CONSTRAINT user_subscription_request_history_user_id_fkey FOREIGN KEY (user_id) REFERENCES public.users(id) ON UPDATE CASCADE ON DELETE CASCADE;

ALTER TABLE ONLY public.user_traffic
    ADD CONSTRAINT user_traffic_id_fkey FOREIGN KEY (id) REFERENCES public.users(id) ON UPDATE CASCADE ON DELETE CASCADE;

ALTER TABLE ONLY public.user_traffic
    ADD CONSTRAINT user_traffic_last_connected_node_uuid_fkey FOREIGN KEY (last_connected_node_uuid) REFERENCES public.nodes(uuid) ON UPDATE CASCADE ON DELETE SET NULL;

ALTER TABLE ONLY public.users
    ADD CONSTRAINT users_external_squad_uuid_fkey FOREIGN KEY (external_squad_uuid) REFERENCES public.external_squads(uuid) ON UPDATE CASCADE ON DELETE SET NULL;


CREATE TABLE public._prisma_migrations (
    id character varying(36) NOT NULL PRIMARY KEY,
    checksum character varying(64) NOT NULL,
    finished_at timestamp with time zone,
    migration_name character varying(255) NOT NULL,
    logs text,
    rolled_back_at timestamp with time zone,
    started_at timestamp with time zone DEFAULT now() NOT NULL,
    applied_steps_count integer DEFAULT 0 NOT NULL
);
INSERT INTO public._prisma_migrations (id, checksum, finished_at, migration_name, applied_steps_count) VALUES
(md5('20241129132625_init')::uuid::text, md5('20241129132625_init'), now(), '20241129132625_init', 1),
(md5('20241205203645_')::uuid::text, md5('20241205203645_'), now(), '20241205203645_', 1),
(md5('20241216003610_add_new_field')::uuid::text, md5('20241216003610_add_new_field'), now(), '20241216003610_add_new_field', 1),
(md5('20241222053036_add_users_online_stat')::uuid::text, md5('20241222053036_add_users_online_stat'), now(), '20241222053036_add_users_online_stat', 1),
(md5('20241225185207_add_node_inbound_exclusions')::uuid::text, md5('20241225185207_add_node_inbound_exclusions'), now(), '20241225185207_add_node_inbound_exclusions', 1),
(md5('20250113213322_add_updated_at_to_nodes_user_usage_history')::uuid::text, md5('20250113213322_add_updated_at_to_nodes_user_usage_history'), now(), '20250113213322_add_updated_at_to_nodes_user_usage_history', 1),
(md5('20250113231728_add_view_position_for_nodes')::uuid::text, md5('20250113231728_add_view_position_for_nodes'), now(), '20250113231728_add_view_position_for_nodes', 1),
(md5('20250114013223_add_country_code')::uuid::text, md5('20250114013223_add_country_code'), now(), '20250114013223_add_country_code', 1),
(md5('20250126164718_add_description_field_and_fix_default_values')::uuid::text, md5('20250126164718_add_description_field_and_fix_default_values'), now(), '20250126164718_add_description_field_and_fix_default_values', 1),
(md5('20250211135916_add_consumption_multiplier')::uuid::text, md5('20250211135916_add_consumption_multiplier'), now(), '20250211135916_add_consumption_multiplier', 1),
(md5('20250219012541_remove')::uuid::text, md5('20250219012541_remove'), now(), '20250219012541_remove', 1),
(md5('20250219013001_remove_depreacted_limit_strategies')::uuid::text, md5('20250219013001_remove_depreacted_limit_strategies'), now(), '20250219013001_remove_depreacted_limit_strategies', 1),
(md5('20250225115627_add_network_and_security_to_inbounds')::uuid::text, md5('20250225115627_add_network_and_security_to_inbounds'), now(), '20250225115627_add_network_and_security_to_inbounds', 1),
(md5('20250301181855_add_telegram_id_and_email_fields')::uuid::text, md5('20250301181855_add_telegram_id_and_email_fields'), now(), '20250301181855_add_telegram_id_and_email_fields', 1),
(md5('20250301203122_upgrade_to_v6')::uuid::text, md5('20250301203122_upgrade_to_v6'), now(), '20250301203122_upgrade_to_v6', 1),
(md5('20250302162049_new_auth_system')::uuid::text, md5('20250302162049_new_auth_system'), now(), '20250302162049_new_auth_system', 1),
(md5('20250307025906_add_xray_uptime')::uuid::text, md5('20250307025906_add_xray_uptime'), now(), '20250307025906_add_xray_uptime', 1),
(md5('20250308020443_add_subscription_templates')::uuid::text, md5('20250308020443_add_subscription_templates'), now(), '20250308020443_add_subscription_templates', 1),
(md5('20250311232029_add_subscription_settings')::uuid::text, md5('20250311232029_add_subscription_settings'), now(), '20250311232029_add_subscription_settings', 1),
(md5('20250312014652_add_boolean_value_for_webpage_url')::uuid::text, md5('20250312014652_add_boolean_value_for_webpage_url'), now(), '20250312014652_add_boolean_value_for_webpage_url', 1),
(md5('20250314164711_add_serve_json_at_base_subscription')::uuid::text, md5('20250314164711_add_serve_json_at_base_subscription'), now(), '20250314164711_add_serve_json_at_base_subscription', 1),
(md5('20250314191018_add_username_to_base_subscription')::uuid::text, md5('20250314191018_add_username_to_base_subscription'), now(), '20250314191018_add_username_to_base_subscription', 1),
(md5('20250315164331_add_security_layer')::uuid::text, md5('20250315164331_add_security_layer'), now(), '20250315164331_add_security_layer', 1),
(md5('20250321173808_add_extra_xhttp')::uuid::text, md5('20250321173808_add_extra_xhttp'), now(), '20250321173808_add_extra_xhttp', 1),
(md5('20250326125917_add_ca_certs')::uuid::text, md5('20250326125917_add_ca_certs'), now(), '20250326125917_add_ca_certs', 1),
(md5('20250403121347_add_is_show_custom_remarks')::uuid::text, md5('20250403121347_add_is_show_custom_remarks'), now(), '20250403121347_add_is_show_custom_remarks', 1),
(md5('20250404230114_replace_uuid_with_id_in_a_few_tables_drop_uuid_for_active_user_inbounds')::uuid::text, md5('20250404230114_replace_uuid_with_id_in_a_few_tables_drop_uuid_for_active_user_inbounds'), now(), '20250404230114_replace_uuid_with_id_in_a_few_tables_drop_uuid_for_active_user_inbounds', 1),
(md5('20250409201313_add_hwid')::uuid::text, md5('20250409201313_add_hwid'), now(), '20250409201313_add_hwid', 1),
(md5('20250410180959_add_custom_response_headers')::uuid::text, md5('20250410180959_add_custom_response_headers'), now(), '20250410180959_add_custom_response_headers', 1),
(md5('20250415192807_change_primary_key_on_hwid_user_devices')::uuid::text, md5('20250415192807_change_primary_key_on_hwid_user_devices'), now(), '20250415192807_change_primary_key_on_hwid_user_devices', 1),
(md5('20250505151503_add_user_tag')::uuid::text, md5('20250505151503_add_user_tag'), now(), '20250505151503_add_user_tag', 1),
(md5('20250506222812_add_index_to_nodes_user_usage_history')::uuid::text, md5('20250506222812_add_index_to_nodes_user_usage_history'), now(), '20250506222812_add_index_to_nodes_user_usage_history', 1),
(md5('20250506224824_add_indexes')::uuid::text, md5('20250506224824_add_indexes'), now(), '20250506224824_add_indexes', 1),
(md5('20250518181139_add_first_connected_at_and_notification_threshold')::uuid::text, md5('20250518181139_add_first_connected_at_and_notification_threshold'), now(), '20250518181139_add_first_connected_at_and_notification_threshold', 1),
(md5('20250519185746_add_randomize_hosts')::uuid::text, md5('20250519185746_add_randomize_hosts'), now(), '20250519185746_add_randomize_hosts', 1),
(md5('20250612160411_add_last_connected_node_uuid')::uuid::text, md5('20250612160411_add_last_connected_node_uuid'), now(), '20250612160411_add_last_connected_node_uuid', 1),
(md5('20250613022955_add_index_to_user_traffic_history')::uuid::text, md5('20250613022955_add_index_to_user_traffic_history'), now(), '20250613022955_add_index_to_user_traffic_history', 1),
(md5('20250619032009_add_squads_and_config_profiles_drop_old_tables')::uuid::text, md5('20250619032009_add_squads_and_config_profiles_drop_old_tables'), now(), '20250619032009_add_squads_and_config_profiles_drop_old_tables', 1),
(md5('20250619033003_add_raw_json_to_config_profile_inbounds')::uuid::text, md5('20250619033003_add_raw_json_to_config_profile_inbounds'), now(), '20250619033003_add_raw_json_to_config_profile_inbounds', 1),
(md5('20250620182607_add_infra_related_tables')::uuid::text, md5('20250620182607_add_infra_related_tables'), now(), '20250620182607_add_infra_related_tables', 1),
(md5('20250625141235_add_server_description_to_hosts')::uuid::text, md5('20250625141235_add_server_description_to_hosts'), now(), '20250625141235_add_server_description_to_hosts', 1),
(md5('20250626184020_change_created_at_in_nodes_user_usage_history')::uuid::text, md5('20250626184020_change_created_at_in_nodes_user_usage_history'), now(), '20250626184020_change_created_at_in_nodes_user_usage_history', 1),
(md5('20250706204810_add_node_version_to_nodes')::uuid::text, md5('20250706204810_add_node_version_to_nodes'), now(), '20250706204810_add_node_version_to_nodes', 1),
(md5('20250713201057_remove_api_token_description')::uuid::text, md5('20250713201057_remove_api_token_description'), now(), '20250713201057_remove_api_token_description', 1),
(md5('20250730131220_add_mux_to_host')::uuid::text, md5('20250730131220_add_mux_to_host'), now(), '20250730131220_add_mux_to_host', 1),
(md5('20250730140727_add_sockopt_params_to_host')::uuid::text, md5('20250730140727_add_sockopt_params_to_host'), now(), '20250730140727_add_sockopt_params_to_host', 1),
(md5('20250807224235_remove_unique_from_host')::uuid::text, md5('20250807224235_remove_unique_from_host'), now(), '20250807224235_remove_unique_from_host', 1),
(md5('20250807234256_add_tag_and_is_hidden_properties_to_host')::uuid::text, md5('20250807234256_add_tag_and_is_hidden_properties_to_host'), now(), '20250807234256_add_tag_and_is_hidden_properties_to_host', 1),
(md5('20250810143307_override_sni_from_address')::uuid::text, md5('20250810143307_override_sni_from_address'), now(), '20250810143307_override_sni_from_address', 1),
(md5('20250817155235_add_vless_route_id')::uuid::text, md5('20250817155235_add_vless_route_id'), now(), '20250817155235_add_vless_route_id', 1),
(md5('20250821172409_add_indexes')::uuid::text, md5('20250821172409_add_indexes'), now(), '20250821172409_add_indexes', 1),
(md5('20250822011918_add_tid')::uuid::text, md5('20250822011918_add_tid'), now(), '20250822011918_add_tid', 1),
(md5('20250913131958_add_subscription_request_history')::uuid::text, md5('20250913131958_add_subscription_request_history'), now(), '20250913131958_add_subscription_request_history', 1),
(md5('20250914181427_add_ais')::uuid::text, md5('20250914181427_add_ais'), now(), '20250914181427_add_ais', 1),
(md5('20250925101912_add_shuffle_host_and_mihomo_x25519')::uuid::text, md5('20250925101912_add_shuffle_host_and_mihomo_x25519'), now(), '20250925101912_add_shuffle_host_and_mihomo_x25519', 1),
(md5('20251008222202_add_hosts_to_nodes')::uuid::text, md5('20251008222202_add_hosts_to_nodes'), now(), '20251008222202_add_hosts_to_nodes', 1),
(md5('20251016013423_add_snippets')::uuid::text, md5('20251016013423_add_snippets'), now(), '20251016013423_add_snippets', 1),
(md5('20251017011159_add_response_rules')::uuid::text, md5('20251017011159_add_response_rules'), now(), '20251017011159_add_response_rules', 1),
(md5('20251019220002_allow_multiple_sub_templates')::uuid::text, md5('20251019220002_allow_multiple_sub_templates'), now(), '20251019220002_allow_multiple_sub_templates', 1),
(md5('20251020051722_add_external_squads')::uuid::text, md5('20251020051722_add_external_squads'), now(), '20251020051722_add_external_squads', 1),
(md5('20251021150742_add_subscription_settings_to_es')::uuid::text, md5('20251021150742_add_subscription_settings_to_es'), now(), '20251021150742_add_subscription_settings_to_es', 1),
(md5('20251023203325_settings_and_passkeys')::uuid::text, md5('20251023203325_settings_and_passkeys'), now(), '20251023203325_settings_and_passkeys', 1),
(md5('20251028234406_add_hosts_override_to_es')::uuid::text, md5('20251028234406_add_hosts_override_to_es'), now(), '20251028234406_add_hosts_override_to_es', 1),
(md5('20251105201518_response_headers_es')::uuid::text, md5('20251105201518_response_headers_es'), now(), '20251105201518_response_headers_es', 1),
(md5('20251109162118_hwid_settings')::uuid::text, md5('20251109162118_hwid_settings'), now(), '20251109162118_hwid_settings', 1),
(md5('20251111012403_nuu_index_drop')::uuid::text, md5('20251111012403_nuu_index_drop'), now(), '20251111012403_nuu_index_drop', 1),
(md5('20251111214604_refactor_user_usage_history')::uuid::text, md5('20251111214604_refactor_user_usage_history'), now(), '20251111214604_refactor_user_usage_history', 1),
(md5('20251112020636_user_traffic')::uuid::text, md5('20251112020636_user_traffic'), now(), '20251112020636_user_traffic', 1),
(md5('20251116151032_add_xray_json_to_host')::uuid::text, md5('20251116151032_add_xray_json_to_host'), now(), '20251116151032_add_xray_json_to_host', 1),
(md5('20251117153032_dnd')::uuid::text, md5('20251117153032_dnd'), now(), '20251117153032_dnd', 1),
(md5('20251118004805_node_tags')::uuid::text, md5('20251118004805_node_tags'), now(), '20251118004805_node_tags', 1),
(md5('20251118174347_internal_squad_host_exclusions')::uuid::text, md5('20251118174347_internal_squad_host_exclusions'), now(), '20251118174347_internal_squad_host_exclusions', 1),
(md5('20251120225934_es_custom_remarks')::uuid::text, md5('20251120225934_es_custom_remarks'), now(), '20251120225934_es_custom_remarks', 1),
(md5('20251121001611_unify_custom_remarks')::uuid::text, md5('20251121001611_unify_custom_remarks'), now(), '20251121001611_unify_custom_remarks', 1),
(md5('20251126082042_drop_add_username_to_base_subscription')::uuid::text, md5('20251126082042_drop_add_username_to_base_subscription'), now(), '20251126082042_drop_add_username_to_base_subscription', 1),
(md5('20251129171418_change_status')::uuid::text, md5('20251129171418_change_status'), now(), '20251129171418_change_status', 1),
(md5('20251129171707_change_pk')::uuid::text, md5('20251129171707_change_pk'), now(), '20251129171707_change_pk', 1),
(md5('20251129180538_stricter_host_columns')::uuid::text, md5('20251129180538_stricter_host_columns'), now(), '20251129180538_stricter_host_columns', 1),
(md5('20251201172156_drop_unused_columns_in_nodes')::uuid::text, md5('20251201172156_drop_unused_columns_in_nodes'), now(), '20251201172156_drop_unused_columns_in_nodes', 1),
(md5('20251201232425_drop_user_traffic_history')::uuid::text, md5('20251201232425_drop_user_traffic_history'), now(), '20251201232425_drop_user_traffic_history', 1),
(md5('20251202213233_change_uuid_to_id_in_is_memers')::uuid::text, md5('20251202213233_change_uuid_to_id_in_is_memers'), now(), '20251202213233_change_uuid_to_id_in_is_memers', 1),
(md5('20251207150402_blank_sni')::uuid::text, md5('20251207150402_blank_sni'), now(), '20251207150402_blank_sni', 1),
(md5('20251214002858_subpage_configs')::uuid::text, md5('20251214002858_subpage_configs'), now(), '20251214002858_subpage_configs', 1),
(md5('20251214163118_truncate_configs')::uuid::text, md5('20251214163118_truncate_configs'), now(), '20251214163118_truncate_configs', 1),
(md5('20251214213514_add_subpage_to_es')::uuid::text, md5('20251214213514_add_subpage_to_es'), now(), '20251214213514_add_subpage_to_es', 1),
(md5('20251215222247_subpage_tr')::uuid::text, md5('20251215222247_subpage_tr'), now(), '20251215222247_subpage_tr', 1),
(md5('20251218145003_nodes_index')::uuid::text, md5('20251218145003_nodes_index'), now(), '20251218145003_nodes_index', 1),
(md5('20260107203202_es_custom_remarks')::uuid::text, md5('20260107203202_es_custom_remarks'), now(), '20260107203202_es_custom_remarks', 1),
(md5('20260225000503_exclude_host_from_subtype')::uuid::text, md5('20260225000503_exclude_host_from_subtype'), now(), '20260225000503_exclude_host_from_subtype', 1),
(md5('20260225202645_node_plugins')::uuid::text, md5('20260225202645_node_plugins'), now(), '20260225202645_node_plugins', 1),
(md5('20260301142020_tg_oauth2')::uuid::text, md5('20260301142020_tg_oauth2'), now(), '20260301142020_tg_oauth2', 1),
(md5('20260305150610_user_node_metadata')::uuid::text, md5('20260305150610_user_node_metadata'), now(), '20260305150610_user_node_metadata', 1),
(md5('20260307201721_torrent_blocker_reports')::uuid::text, md5('20260307201721_torrent_blocker_reports'), now(), '20260307201721_torrent_blocker_reports', 1),
(md5('20260312215357_drop_unused_columns')::uuid::text, md5('20260312215357_drop_unused_columns'), now(), '20260312215357_drop_unused_columns', 1),
(md5('20260315172145_drop_legacy_columns')::uuid::text, md5('20260315172145_drop_legacy_columns'), now(), '20260315172145_drop_legacy_columns', 1),
(md5('20260327170528_drop_node_columns')::uuid::text, md5('20260327170528_drop_node_columns'), now(), '20260327170528_drop_node_columns', 1),
(md5('20260328174929_final_mask_in_host')::uuid::text, md5('20260328174929_final_mask_in_host'), now(), '20260328174929_final_mask_in_host', 1),
(md5('20260407151134_repalce_uuid_with_user_id')::uuid::text, md5('20260407151134_repalce_uuid_with_user_id'), now(), '20260407151134_repalce_uuid_with_user_id', 1),
(md5('20260601044404_remove_allow_insecure')::uuid::text, md5('20260601044404_remove_allow_insecure'), now(), '20260601044404_remove_allow_insecure', 1),
(md5('20260601143124_add_verify_peer_cert_by_name')::uuid::text, md5('20260601143124_add_verify_peer_cert_by_name'), now(), '20260601143124_add_verify_peer_cert_by_name', 1),
(md5('20260602181750_add_mihomo_ip_version')::uuid::text, md5('20260602181750_add_mihomo_ip_version'), now(), '20260602181750_add_mihomo_ip_version', 1),
(md5('20260604145012_add_node_note')::uuid::text, md5('20260604145012_add_node_note'), now(), '20260604145012_add_node_note', 1),
(md5('20260604160914_add_host_tags')::uuid::text, md5('20260604160914_add_host_tags'), now(), '20260604160914_add_host_tags', 1),
(md5('20260604221858_add_proxy_for_node')::uuid::text, md5('20260604221858_add_proxy_for_node'), now(), '20260604221858_add_proxy_for_node', 1),
(md5('20260612170542_add_node_consumption_multiplier')::uuid::text, md5('20260612170542_add_node_consumption_multiplier'), now(), '20260612170542_add_node_consumption_multiplier', 1),
(md5('20260614181725_add_index_to_expire_at')::uuid::text, md5('20260614181725_add_index_to_expire_at'), now(), '20260614181725_add_index_to_expire_at', 1),
(md5('20260620150954_add_api_tokens_scopes')::uuid::text, md5('20260620150954_add_api_tokens_scopes'), now(), '20260620150954_add_api_tokens_scopes', 1),
(md5('20260622153610_optional_billing_node')::uuid::text, md5('20260622153610_optional_billing_node'), now(), '20260622153610_optional_billing_node', 1),
(md5('20260625133614_expire_at_for_api_tokens')::uuid::text, md5('20260625133614_expire_at_for_api_tokens'), now(), '20260625133614_expire_at_for_api_tokens', 1),
(md5('20260625200256_drop_unused_index')::uuid::text, md5('20260625200256_drop_unused_index'), now(), '20260625200256_drop_unused_index', 1),
(md5('20260625200309_add_where_index')::uuid::text, md5('20260625200309_add_where_index'), now(), '20260625200309_add_where_index', 1),
(md5('20260625200530_add_external_squad_index')::uuid::text, md5('20260625200530_add_external_squad_index'), now(), '20260625200530_add_external_squad_index', 1),
(md5('20260702230159_add_user_id_index_to_hwid_devices')::uuid::text, md5('20260702230159_add_user_id_index_to_hwid_devices'), now(), '20260702230159_add_user_id_index_to_hwid_devices', 1),
(md5('20260703000112_drop_unused_table')::uuid::text, md5('20260703000112_drop_unused_table'), now(), '20260703000112_drop_unused_table', 1),
(md5('20260703205426_increase_host_remark_limit')::uuid::text, md5('20260703205426_increase_host_remark_limit'), now(), '20260703205426_increase_host_remark_limit', 1),
(md5('20260706144257_drop_default_on_api_tokens')::uuid::text, md5('20260706144257_drop_default_on_api_tokens'), now(), '20260706144257_drop_default_on_api_tokens', 1),
(md5('20260706192331_change_hwid_datatype')::uuid::text, md5('20260706192331_change_hwid_datatype'), now(), '20260706192331_change_hwid_datatype', 1),
(md5('20260710141018_add_nuuh_user_id_created_at_index')::uuid::text, md5('20260710141018_add_nuuh_user_id_created_at_index'), now(), '20260710141018_add_nuuh_user_id_created_at_index', 1),
(md5('20260714190723_add_index_to_telegram_id')::uuid::text, md5('20260714190723_add_index_to_telegram_id'), now(), '20260714190723_add_index_to_telegram_id', 1),
(md5('20260717190133_es_response_headers')::uuid::text, md5('20260717190133_es_response_headers'), now(), '20260717190133_es_response_headers', 1),
(md5('20260717203703_migrate_fields_to_response_headers')::uuid::text, md5('20260717203703_migrate_fields_to_response_headers'), now(), '20260717203703_migrate_fields_to_response_headers', 1),
(md5('20260720124815_rename_column')::uuid::text, md5('20260720124815_rename_column'), now(), '20260720124815_rename_column', 1),
(md5('20260720132335_drop_user_uuid')::uuid::text, md5('20260720132335_drop_user_uuid'), now(), '20260720132335_drop_user_uuid', 1),
(md5('20260726011328_index_to_users')::uuid::text, md5('20260726011328_index_to_users'), now(), '20260726011328_index_to_users', 1),
(md5('20260801175808_srr_info_in_srh')::uuid::text, md5('20260801175808_srr_info_in_srh'), now(), '20260801175808_srr_info_in_srh', 1),
(md5('20260806120000_add_node_ips')::uuid::text, md5('20260806120000_add_node_ips'), now(), '20260806120000_add_node_ips', 1),
(md5('20260811025420_add_host_mapper')::uuid::text, md5('20260811025420_add_host_mapper'), now(), '20260811025420_add_host_mapper', 1),
(md5('20260815012443_add_node_integrations')::uuid::text, md5('20260815012443_add_node_integrations'), now(), '20260815012443_add_node_integrations', 1),
(md5('20260815170000_add_shared_lists')::uuid::text, md5('20260815170000_add_shared_lists'), now(), '20260815170000_add_shared_lists', 1);
