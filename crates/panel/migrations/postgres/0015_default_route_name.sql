-- Entries are named after their routes now, no longer after the inbound the balancer
-- chose: a default route still called 'Default' takes the name of its first inbound,
-- so its users keep seeing what they saw. A route without inbounds keeps its name.
UPDATE routes
SET name = (
    SELECT i.name FROM route_inbounds ri JOIN inbounds i ON i.id = ri.inbound_id
    WHERE ri.route_id = routes.id
    ORDER BY ri.position, ri.inbound_id
    LIMIT 1
)
WHERE is_default = 1 AND name = 'Default'
    AND EXISTS (SELECT 1 FROM route_inbounds ri WHERE ri.route_id = routes.id);
