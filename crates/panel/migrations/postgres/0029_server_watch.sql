-- What the webhook observer last saw of each server's state (NULL: not seen yet).
ALTER TABLE servers ADD COLUMN watch_state TEXT;
