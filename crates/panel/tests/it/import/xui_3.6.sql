-- 3x-ui 3.6's database as its own code makes it, for the tables the import reads
-- and those 3x-ui writes with each client. 3x-ui is a Go program built from Go
-- modules this machine cannot fetch, so it cannot run here; its tables are made by
-- GORM's AutoMigrate from its models (`internal/database/model/model.go` and
-- `internal/xray/client_traffic.go` at v3.6.0), and these are the statements GORM's
-- SQLite dialect issues for them: the same tables, columns, types, defaults and
-- constraints, in the order 3x-ui migrates them. (3.6 also migrates nodes, API
-- tokens, hosts, fallbacks, external links and per-node counters, which the import
-- does not read.)
CREATE TABLE `users` (`id` integer PRIMARY KEY AUTOINCREMENT,`username` text,`password` text,`login_epoch` integer DEFAULT 0);
CREATE TABLE `inbounds` (`id` integer PRIMARY KEY AUTOINCREMENT,`user_id` integer,`up` integer,`down` integer,`total` integer,`remark` text,`sub_sort_index` integer DEFAULT 1,`enable` numeric,`expiry_time` integer,`traffic_reset` text DEFAULT "never",`traffic_reset_day` integer DEFAULT 1,`last_traffic_reset_time` integer DEFAULT 0,`listen` text,`port` integer,`protocol` text,`settings` text,`stream_settings` text,`tag` text,`sniffing` text,`node_id` integer,`share_addr_strategy` text DEFAULT "node",`share_addr` text,`origin_node_guid` text,CONSTRAINT `uni_inbounds_tag` UNIQUE (`tag`));
CREATE INDEX `idx_inbounds_origin_node_guid` ON `inbounds`(`origin_node_guid`);
CREATE INDEX `idx_inbounds_node_id` ON `inbounds`(`node_id`);
CREATE INDEX `idx_enable_traffic_reset` ON `inbounds`(`enable`,`traffic_reset`);
CREATE TABLE `outbound_traffics` (`id` integer PRIMARY KEY AUTOINCREMENT,`tag` text,`up` integer DEFAULT 0,`down` integer DEFAULT 0,`total` integer DEFAULT 0,CONSTRAINT `uni_outbound_traffics_tag` UNIQUE (`tag`));
CREATE TABLE `settings` (`id` integer PRIMARY KEY AUTOINCREMENT,`key` text,`value` text);
CREATE INDEX `idx_settings_key` ON `settings`(`key`);
CREATE TABLE `inbound_client_ips` (`id` integer PRIMARY KEY AUTOINCREMENT,`client_email` text,`ips` text,CONSTRAINT `uni_inbound_client_ips_client_email` UNIQUE (`client_email`));
CREATE TABLE `client_traffics` (`id` integer PRIMARY KEY AUTOINCREMENT,`inbound_id` integer,`enable` numeric,`email` text,`up` integer,`down` integer,`expiry_time` integer,`total` integer,`reset` integer DEFAULT 0,`last_online` integer DEFAULT 0,CONSTRAINT `fk_inbounds_client_stats` FOREIGN KEY (`inbound_id`) REFERENCES `inbounds`(`id`),CONSTRAINT `uni_client_traffics_email` UNIQUE (`email`));
CREATE INDEX `idx_client_traffics_renew` ON `client_traffics`(`expiry_time`,`reset`);
CREATE INDEX `idx_client_traffics_inbound` ON `client_traffics`(`inbound_id`);
CREATE TABLE `history_of_seeders` (`id` integer PRIMARY KEY AUTOINCREMENT,`seeder_name` text);
CREATE TABLE `clients` (`id` integer PRIMARY KEY AUTOINCREMENT,`email` text NOT NULL,`sub_id` text,`uuid` text,`password` text,`auth` text,`flow` text,`security` text,`reverse` text,`wg_private_key` text,`wg_public_key` text,`wg_allowed_ips` text,`wg_pre_shared_key` text,`wg_keep_alive` integer DEFAULT 0,`secret` text,`ad_tag` text DEFAULT "",`limit_ip` integer,`total_gb` integer,`expiry_time` integer,`enable` numeric DEFAULT true,`tg_id` integer,`group_name` text DEFAULT "",`comment` text,`reset` integer DEFAULT 0,`created_at` integer,`updated_at` integer);
CREATE INDEX `idx_client_record_group` ON `clients`(`group_name`);
CREATE INDEX `idx_clients_tg_id` ON `clients`(`tg_id`);
CREATE INDEX `idx_clients_sub_id` ON `clients`(`sub_id`);
CREATE UNIQUE INDEX `idx_clients_email` ON `clients`(`email`);
CREATE TABLE `client_inbounds` (`client_id` integer,`inbound_id` integer,`flow_override` text,`created_at` integer,PRIMARY KEY (`client_id`,`inbound_id`));
CREATE INDEX `idx_client_inbounds_inbound_id` ON `client_inbounds`(`inbound_id`);
CREATE INDEX `idx_client_inbounds_client_id` ON `client_inbounds`(`client_id`);
CREATE TABLE `client_groups` (`id` integer PRIMARY KEY AUTOINCREMENT,`name` text NOT NULL,`reset_up` integer DEFAULT 0,`reset_down` integer DEFAULT 0,`created_at` integer,`updated_at` integer);
CREATE UNIQUE INDEX `idx_client_groups_name` ON `client_groups`(`name`);
