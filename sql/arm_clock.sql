-- Forgetting on the arm's clock (the default): window, discount and
-- restart_every count each arm's own rewards, so an arm that is not chosen
-- never forgets.  Settings that forget on the arm's clock say so with a
-- NOTICE and a hint towards the selector's clock, at create_selector(),
-- alter_selector() and resolve_settings(); the selector's and the time
-- clock, and settings without forgetting, say nothing.
CREATE EXTENSION model_select;
SELECT model_select.create_selector('w', 4, ARRAY['a', 'b'], 'pak_ucb', NULL, '{"window": 300}') > 0 AS created;
SELECT model_select.create_selector('s', 4, ARRAY['a', 'b'], 'pak_ucb', NULL, '{"window": 300, "clock": "selector"}') > 0 AS created;
SELECT model_select.create_selector('p', 4, ARRAY['a', 'b'], 'lin_ucb') > 0 AS created;
SELECT model_select.alter_selector('p', '{"discount": 0.99}');
SELECT model_select.alter_selector('p', '{"discount": 0.99, "clock": "selector"}');
SELECT model_select.resolve_settings('greedy', NULL, '{"restart_every": 100}') ->> 'clock' AS clock;
SELECT model_select.resolve_settings('greedy', NULL, '{"window": "1 day", "clock": "time"}') ->> 'clock' AS clock;
DROP EXTENSION model_select;
