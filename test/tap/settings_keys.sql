-- Which setting keys apply, policy by policy: resolve_settings() for every
-- policy with each of its kernels, under settings that unlock the keys that
-- apply only sometimes (each confidence bound, the time and selector clocks,
-- a budget, a restart), gives the keys recorded below (sorted) or the same
-- error.  Recorded from the settings table when every key's scope was a
-- capability of PolicyOps, before the policies declared their own keys
-- (PolicyOps.settings): a declared key must apply exactly where the
-- capability made it apply.  Since then: lin_ucb's and rff_ucb's own keys
-- share and noise_prior, in the rows with confidence fixed, and lin_ucb's
-- codebook and codebook_shrink, in all of its rows; pak_ucb's own key
-- noise_prior (its learnt noise scale), in its rows with confidence fixed;
-- pending_horizon (the pacer's count of decisions not rewarded yet) in every
-- row with a budget; tag_buckets, in every row of a policy that uses the
-- context (added below to the recorded keys).
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION model_select;
SELECT plan(4);

-- The sorted keys resolve_settings() returns, or its SQLSTATE and message.
CREATE FUNCTION pg_temp.keys_or_error(p text, k text, s jsonb) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    msg text;
    state text;
BEGIN
    RETURN (SELECT string_agg(key, ' ' ORDER BY key)
              FROM jsonb_object_keys(model_select.resolve_settings(p, k, s)) key);
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT, state = RETURNED_SQLSTATE;
    RETURN state || ' ' || msg;
END $$;

CREATE TEMP TABLE recorded (policy text, kernel text, settings jsonb, keys text);
INSERT INTO recorded VALUES
    ('pak_ucb', 'rbf', '{"budget": 10}', 'alpha bandwidth budget cap confidence cost_weight discount eta exploration intercept noise_prior normalize pace pending_horizon restart_every reward_max reward_min window'),
    ('pak_ucb', 'rbf', '{"clock": "selector", "discount": 0.9}', 'alpha bandwidth budget cap clock confidence cost_weight discount eta exploration intercept noise_prior normalize restart_every reward_max reward_min window'),
    ('pak_ucb', 'rbf', '{"clock": "time", "half_life": "1 day"}', 'alpha bandwidth budget cap clock confidence cost_weight eta exploration half_life intercept noise_prior normalize restart_every reward_max reward_min window'),
    ('pak_ucb', 'rbf', '{"clock": "time", "window": "1 hour"}', 'alpha bandwidth budget cap clock confidence cost_weight eta exploration half_life intercept noise_prior normalize restart_every reward_max reward_min window'),
    ('pak_ucb', 'rbf', '{"confidence": "amm"}', 'alpha bandwidth budget cap confidence cost_weight delta discount intercept noise normalize restart_every reward_max reward_min rkhs_bound window'),
    ('pak_ucb', 'rbf', '{"confidence": "ay"}', 'alpha bandwidth budget cap confidence cost_weight delta discount intercept noise normalize restart_every reward_max reward_min rkhs_bound window'),
    ('pak_ucb', 'rbf', '{"confidence": "cmm"}', 'alpha bandwidth budget cap confidence cost_weight delta discount grid intercept noise normalize restart_every reward_max reward_min rkhs_bound window'),
    ('pak_ucb', 'rbf', '{"confidence": "dmm"}', 'alpha bandwidth budget cap confidence cost_weight delta discount grid intercept noise normalize restart_every reward_max reward_min rkhs_bound window'),
    ('pak_ucb', 'rbf', '{"confidence": "igp"}', 'bandwidth budget cap confidence cost_weight delta discount horizon intercept noise normalize restart_every reward_max reward_min rkhs_bound window'),
    ('pak_ucb', 'rbf', '{"restart_every": 50}', 'alpha bandwidth budget cap clock confidence cost_weight discount eta exploration intercept noise_prior normalize restart_every reward_max reward_min window'),
    ('pak_ucb', 'rbf', '{}', 'alpha bandwidth budget cap confidence cost_weight discount eta exploration intercept noise_prior normalize restart_every reward_max reward_min window'),
    ('pak_ucb', 'poly', '{"budget": 10}', 'alpha budget cap confidence cost_weight degree discount eta exploration gamma intercept noise_prior normalize offset pace pending_horizon restart_every reward_max reward_min window'),
    ('pak_ucb', 'poly', '{"clock": "selector", "discount": 0.9}', 'alpha budget cap clock confidence cost_weight degree discount eta exploration gamma intercept noise_prior normalize offset restart_every reward_max reward_min window'),
    ('pak_ucb', 'poly', '{"clock": "time", "half_life": "1 day"}', 'alpha budget cap clock confidence cost_weight degree eta exploration gamma half_life intercept noise_prior normalize offset restart_every reward_max reward_min window'),
    ('pak_ucb', 'poly', '{"clock": "time", "window": "1 hour"}', 'alpha budget cap clock confidence cost_weight degree eta exploration gamma half_life intercept noise_prior normalize offset restart_every reward_max reward_min window'),
    ('pak_ucb', 'poly', '{"confidence": "amm"}', 'alpha budget cap confidence cost_weight degree delta discount gamma intercept noise normalize offset restart_every reward_max reward_min rkhs_bound window'),
    ('pak_ucb', 'poly', '{"confidence": "ay"}', 'alpha budget cap confidence cost_weight degree delta discount gamma intercept noise normalize offset restart_every reward_max reward_min rkhs_bound window'),
    ('pak_ucb', 'poly', '{"confidence": "cmm"}', 'alpha budget cap confidence cost_weight degree delta discount gamma grid intercept noise normalize offset restart_every reward_max reward_min rkhs_bound window'),
    ('pak_ucb', 'poly', '{"confidence": "dmm"}', 'alpha budget cap confidence cost_weight degree delta discount gamma grid intercept noise normalize offset restart_every reward_max reward_min rkhs_bound window'),
    ('pak_ucb', 'poly', '{"confidence": "igp"}', 'budget cap confidence cost_weight degree delta discount gamma horizon intercept noise normalize offset restart_every reward_max reward_min rkhs_bound window'),
    ('pak_ucb', 'poly', '{"restart_every": 50}', 'alpha budget cap clock confidence cost_weight degree discount eta exploration gamma intercept noise_prior normalize offset restart_every reward_max reward_min window'),
    ('pak_ucb', 'poly', '{}', 'alpha budget cap confidence cost_weight degree discount eta exploration gamma intercept noise_prior normalize offset restart_every reward_max reward_min window'),
    ('pak_ucb', 'linear', '{"budget": 10}', 'alpha budget cap confidence cost_weight discount eta exploration intercept noise_prior normalize pace pending_horizon restart_every reward_max reward_min window'),
    ('pak_ucb', 'linear', '{"clock": "selector", "discount": 0.9}', 'alpha budget cap clock confidence cost_weight discount eta exploration intercept noise_prior normalize restart_every reward_max reward_min window'),
    ('pak_ucb', 'linear', '{"clock": "time", "half_life": "1 day"}', 'alpha budget cap clock confidence cost_weight eta exploration half_life intercept noise_prior normalize restart_every reward_max reward_min window'),
    ('pak_ucb', 'linear', '{"clock": "time", "window": "1 hour"}', 'alpha budget cap clock confidence cost_weight eta exploration half_life intercept noise_prior normalize restart_every reward_max reward_min window'),
    ('pak_ucb', 'linear', '{"confidence": "amm"}', 'alpha budget cap confidence cost_weight delta discount intercept noise normalize restart_every reward_max reward_min rkhs_bound window'),
    ('pak_ucb', 'linear', '{"confidence": "ay"}', 'alpha budget cap confidence cost_weight delta discount intercept noise normalize restart_every reward_max reward_min rkhs_bound window'),
    ('pak_ucb', 'linear', '{"confidence": "cmm"}', 'alpha budget cap confidence cost_weight delta discount grid intercept noise normalize restart_every reward_max reward_min rkhs_bound window'),
    ('pak_ucb', 'linear', '{"confidence": "dmm"}', 'alpha budget cap confidence cost_weight delta discount grid intercept noise normalize restart_every reward_max reward_min rkhs_bound window'),
    ('pak_ucb', 'linear', '{"confidence": "igp"}', 'budget cap confidence cost_weight delta discount horizon intercept noise normalize restart_every reward_max reward_min rkhs_bound window'),
    ('pak_ucb', 'linear', '{"restart_every": 50}', 'alpha budget cap clock confidence cost_weight discount eta exploration intercept noise_prior normalize restart_every reward_max reward_min window'),
    ('pak_ucb', 'linear', '{}', 'alpha budget cap confidence cost_weight discount eta exploration intercept noise_prior normalize restart_every reward_max reward_min window'),
    ('pak_ucb', 'laplacian', '{"budget": 10}', 'alpha bandwidth budget cap confidence cost_weight discount eta exploration intercept noise_prior normalize pace pending_horizon restart_every reward_max reward_min window'),
    ('pak_ucb', 'laplacian', '{"clock": "selector", "discount": 0.9}', 'alpha bandwidth budget cap clock confidence cost_weight discount eta exploration intercept noise_prior normalize restart_every reward_max reward_min window'),
    ('pak_ucb', 'laplacian', '{"clock": "time", "half_life": "1 day"}', 'alpha bandwidth budget cap clock confidence cost_weight eta exploration half_life intercept noise_prior normalize restart_every reward_max reward_min window'),
    ('pak_ucb', 'laplacian', '{"clock": "time", "window": "1 hour"}', 'alpha bandwidth budget cap clock confidence cost_weight eta exploration half_life intercept noise_prior normalize restart_every reward_max reward_min window'),
    ('pak_ucb', 'laplacian', '{"confidence": "amm"}', 'alpha bandwidth budget cap confidence cost_weight delta discount intercept noise normalize restart_every reward_max reward_min rkhs_bound window'),
    ('pak_ucb', 'laplacian', '{"confidence": "ay"}', 'alpha bandwidth budget cap confidence cost_weight delta discount intercept noise normalize restart_every reward_max reward_min rkhs_bound window'),
    ('pak_ucb', 'laplacian', '{"confidence": "cmm"}', 'alpha bandwidth budget cap confidence cost_weight delta discount grid intercept noise normalize restart_every reward_max reward_min rkhs_bound window'),
    ('pak_ucb', 'laplacian', '{"confidence": "dmm"}', 'alpha bandwidth budget cap confidence cost_weight delta discount grid intercept noise normalize restart_every reward_max reward_min rkhs_bound window'),
    ('pak_ucb', 'laplacian', '{"confidence": "igp"}', 'bandwidth budget cap confidence cost_weight delta discount horizon intercept noise normalize restart_every reward_max reward_min rkhs_bound window'),
    ('pak_ucb', 'laplacian', '{"restart_every": 50}', 'alpha bandwidth budget cap clock confidence cost_weight discount eta exploration intercept noise_prior normalize restart_every reward_max reward_min window'),
    ('pak_ucb', 'laplacian', '{}', 'alpha bandwidth budget cap confidence cost_weight discount eta exploration intercept noise_prior normalize restart_every reward_max reward_min window'),
    ('pak_ucb', 'matern', '{"budget": 10}', 'alpha bandwidth budget cap confidence cost_weight discount eta exploration intercept noise_prior normalize nu pace pending_horizon restart_every reward_max reward_min window'),
    ('pak_ucb', 'matern', '{"clock": "selector", "discount": 0.9}', 'alpha bandwidth budget cap clock confidence cost_weight discount eta exploration intercept noise_prior normalize nu restart_every reward_max reward_min window'),
    ('pak_ucb', 'matern', '{"clock": "time", "half_life": "1 day"}', 'alpha bandwidth budget cap clock confidence cost_weight eta exploration half_life intercept noise_prior normalize nu restart_every reward_max reward_min window'),
    ('pak_ucb', 'matern', '{"clock": "time", "window": "1 hour"}', 'alpha bandwidth budget cap clock confidence cost_weight eta exploration half_life intercept noise_prior normalize nu restart_every reward_max reward_min window'),
    ('pak_ucb', 'matern', '{"confidence": "amm"}', 'alpha bandwidth budget cap confidence cost_weight delta discount intercept noise normalize nu restart_every reward_max reward_min rkhs_bound window'),
    ('pak_ucb', 'matern', '{"confidence": "ay"}', 'alpha bandwidth budget cap confidence cost_weight delta discount intercept noise normalize nu restart_every reward_max reward_min rkhs_bound window'),
    ('pak_ucb', 'matern', '{"confidence": "cmm"}', 'alpha bandwidth budget cap confidence cost_weight delta discount grid intercept noise normalize nu restart_every reward_max reward_min rkhs_bound window'),
    ('pak_ucb', 'matern', '{"confidence": "dmm"}', 'alpha bandwidth budget cap confidence cost_weight delta discount grid intercept noise normalize nu restart_every reward_max reward_min rkhs_bound window'),
    ('pak_ucb', 'matern', '{"confidence": "igp"}', 'bandwidth budget cap confidence cost_weight delta discount horizon intercept noise normalize nu restart_every reward_max reward_min rkhs_bound window'),
    ('pak_ucb', 'matern', '{"restart_every": 50}', 'alpha bandwidth budget cap clock confidence cost_weight discount eta exploration intercept noise_prior normalize nu restart_every reward_max reward_min window'),
    ('pak_ucb', 'matern', '{}', 'alpha bandwidth budget cap confidence cost_weight discount eta exploration intercept noise_prior normalize nu restart_every reward_max reward_min window'),
    ('rff_ucb', 'rbf', '{"budget": 10}', 'alpha bandwidth budget confidence cost_weight discount eta exploration features intercept noise_prior normalize pace pending_horizon restart_every reward_max reward_min share window'),
    ('rff_ucb', 'rbf', '{"clock": "selector", "discount": 0.9}', 'alpha bandwidth budget clock confidence cost_weight discount eta exploration features intercept noise_prior normalize restart_every reward_max reward_min share window'),
    ('rff_ucb', 'rbf', '{"clock": "time", "half_life": "1 day"}', 'alpha bandwidth budget cap clock confidence cost_weight eta exploration features half_life intercept noise_prior normalize restart_every reward_max reward_min share window'),
    ('rff_ucb', 'rbf', '{"clock": "time", "window": "1 hour"}', 'alpha bandwidth budget cap clock confidence cost_weight eta exploration features half_life intercept noise_prior normalize restart_every reward_max reward_min share window'),
    ('rff_ucb', 'rbf', '{"confidence": "amm"}', 'alpha bandwidth budget confidence cost_weight delta discount features intercept noise normalize restart_every reward_max reward_min rkhs_bound window'),
    ('rff_ucb', 'rbf', '{"confidence": "ay"}', 'alpha bandwidth budget confidence cost_weight delta discount features intercept noise normalize restart_every reward_max reward_min rkhs_bound window'),
    ('rff_ucb', 'rbf', '{"confidence": "cmm"}', 'alpha bandwidth budget confidence cost_weight delta discount features grid intercept noise normalize restart_every reward_max reward_min rkhs_bound window'),
    ('rff_ucb', 'rbf', '{"confidence": "dmm"}', 'alpha bandwidth budget confidence cost_weight delta discount features grid intercept noise normalize restart_every reward_max reward_min rkhs_bound window'),
    ('rff_ucb', 'rbf', '{"confidence": "igp"}', 'bandwidth budget confidence cost_weight delta discount features horizon intercept noise normalize restart_every reward_max reward_min rkhs_bound window'),
    ('rff_ucb', 'rbf', '{"restart_every": 50}', 'alpha bandwidth budget clock confidence cost_weight discount eta exploration features intercept noise_prior normalize restart_every reward_max reward_min share window'),
    ('rff_ucb', 'rbf', '{}', 'alpha bandwidth budget confidence cost_weight discount eta exploration features intercept noise_prior normalize restart_every reward_max reward_min share window'),
    ('rff_ucb', 'laplacian', '{"budget": 10}', 'alpha bandwidth budget confidence cost_weight discount eta exploration features intercept noise_prior normalize pace pending_horizon restart_every reward_max reward_min share window'),
    ('rff_ucb', 'laplacian', '{"clock": "selector", "discount": 0.9}', 'alpha bandwidth budget clock confidence cost_weight discount eta exploration features intercept noise_prior normalize restart_every reward_max reward_min share window'),
    ('rff_ucb', 'laplacian', '{"clock": "time", "half_life": "1 day"}', 'alpha bandwidth budget cap clock confidence cost_weight eta exploration features half_life intercept noise_prior normalize restart_every reward_max reward_min share window'),
    ('rff_ucb', 'laplacian', '{"clock": "time", "window": "1 hour"}', 'alpha bandwidth budget cap clock confidence cost_weight eta exploration features half_life intercept noise_prior normalize restart_every reward_max reward_min share window'),
    ('rff_ucb', 'laplacian', '{"confidence": "amm"}', 'alpha bandwidth budget confidence cost_weight delta discount features intercept noise normalize restart_every reward_max reward_min rkhs_bound window'),
    ('rff_ucb', 'laplacian', '{"confidence": "ay"}', 'alpha bandwidth budget confidence cost_weight delta discount features intercept noise normalize restart_every reward_max reward_min rkhs_bound window'),
    ('rff_ucb', 'laplacian', '{"confidence": "cmm"}', 'alpha bandwidth budget confidence cost_weight delta discount features grid intercept noise normalize restart_every reward_max reward_min rkhs_bound window'),
    ('rff_ucb', 'laplacian', '{"confidence": "dmm"}', 'alpha bandwidth budget confidence cost_weight delta discount features grid intercept noise normalize restart_every reward_max reward_min rkhs_bound window'),
    ('rff_ucb', 'laplacian', '{"confidence": "igp"}', 'bandwidth budget confidence cost_weight delta discount features horizon intercept noise normalize restart_every reward_max reward_min rkhs_bound window'),
    ('rff_ucb', 'laplacian', '{"restart_every": 50}', 'alpha bandwidth budget clock confidence cost_weight discount eta exploration features intercept noise_prior normalize restart_every reward_max reward_min share window'),
    ('rff_ucb', 'laplacian', '{}', 'alpha bandwidth budget confidence cost_weight discount eta exploration features intercept noise_prior normalize restart_every reward_max reward_min share window'),
    ('rff_ucb', 'matern', '{"budget": 10}', 'alpha bandwidth budget confidence cost_weight discount eta exploration features intercept noise_prior normalize nu pace pending_horizon restart_every reward_max reward_min share window'),
    ('rff_ucb', 'matern', '{"clock": "selector", "discount": 0.9}', 'alpha bandwidth budget clock confidence cost_weight discount eta exploration features intercept noise_prior normalize nu restart_every reward_max reward_min share window'),
    ('rff_ucb', 'matern', '{"clock": "time", "half_life": "1 day"}', 'alpha bandwidth budget cap clock confidence cost_weight eta exploration features half_life intercept noise_prior normalize nu restart_every reward_max reward_min share window'),
    ('rff_ucb', 'matern', '{"clock": "time", "window": "1 hour"}', 'alpha bandwidth budget cap clock confidence cost_weight eta exploration features half_life intercept noise_prior normalize nu restart_every reward_max reward_min share window'),
    ('rff_ucb', 'matern', '{"confidence": "amm"}', 'alpha bandwidth budget confidence cost_weight delta discount features intercept noise normalize nu restart_every reward_max reward_min rkhs_bound window'),
    ('rff_ucb', 'matern', '{"confidence": "ay"}', 'alpha bandwidth budget confidence cost_weight delta discount features intercept noise normalize nu restart_every reward_max reward_min rkhs_bound window'),
    ('rff_ucb', 'matern', '{"confidence": "cmm"}', 'alpha bandwidth budget confidence cost_weight delta discount features grid intercept noise normalize nu restart_every reward_max reward_min rkhs_bound window'),
    ('rff_ucb', 'matern', '{"confidence": "dmm"}', 'alpha bandwidth budget confidence cost_weight delta discount features grid intercept noise normalize nu restart_every reward_max reward_min rkhs_bound window'),
    ('rff_ucb', 'matern', '{"confidence": "igp"}', 'bandwidth budget confidence cost_weight delta discount features horizon intercept noise normalize nu restart_every reward_max reward_min rkhs_bound window'),
    ('rff_ucb', 'matern', '{"restart_every": 50}', 'alpha bandwidth budget clock confidence cost_weight discount eta exploration features intercept noise_prior normalize nu restart_every reward_max reward_min share window'),
    ('rff_ucb', 'matern', '{}', 'alpha bandwidth budget confidence cost_weight discount eta exploration features intercept noise_prior normalize nu restart_every reward_max reward_min share window'),
    ('bkb', 'rbf', '{"budget": 10}', 'adaptive_beta alpha bandwidth budget cap cost_weight delta eta intercept noise normalize pace pending_horizon qbar reward_max reward_min rkhs_bound'),
    ('bkb', 'rbf', '{"clock": "selector", "discount": 0.9}', '22023 invalid setting "discount": does not apply to this policy, kernel and confidence'),
    ('bkb', 'rbf', '{"clock": "time", "half_life": "1 day"}', '22023 invalid setting "half_life": does not apply to this policy, kernel and confidence'),
    ('bkb', 'rbf', '{"clock": "time", "window": "1 hour"}', '22023 invalid setting "window": does not apply to this policy, kernel and confidence'),
    ('bkb', 'rbf', '{"confidence": "amm"}', '22023 invalid setting "confidence": does not apply to this policy, kernel and confidence'),
    ('bkb', 'rbf', '{"confidence": "ay"}', '22023 invalid setting "confidence": does not apply to this policy, kernel and confidence'),
    ('bkb', 'rbf', '{"confidence": "cmm"}', '22023 invalid setting "confidence": does not apply to this policy, kernel and confidence'),
    ('bkb', 'rbf', '{"confidence": "dmm"}', '22023 invalid setting "confidence": does not apply to this policy, kernel and confidence'),
    ('bkb', 'rbf', '{"confidence": "igp"}', '22023 invalid setting "confidence": does not apply to this policy, kernel and confidence'),
    ('bkb', 'rbf', '{"restart_every": 50}', '22023 invalid setting "restart_every": does not apply to this policy, kernel and confidence'),
    ('bkb', 'rbf', '{}', 'adaptive_beta alpha bandwidth budget cap cost_weight delta eta intercept noise normalize qbar reward_max reward_min rkhs_bound'),
    ('bkb', 'poly', '{"budget": 10}', 'adaptive_beta alpha budget cap cost_weight degree delta eta gamma intercept noise normalize offset pace pending_horizon qbar reward_max reward_min rkhs_bound'),
    ('bkb', 'poly', '{"clock": "selector", "discount": 0.9}', '22023 invalid setting "discount": does not apply to this policy, kernel and confidence'),
    ('bkb', 'poly', '{"clock": "time", "half_life": "1 day"}', '22023 invalid setting "half_life": does not apply to this policy, kernel and confidence'),
    ('bkb', 'poly', '{"clock": "time", "window": "1 hour"}', '22023 invalid setting "window": does not apply to this policy, kernel and confidence'),
    ('bkb', 'poly', '{"confidence": "amm"}', '22023 invalid setting "confidence": does not apply to this policy, kernel and confidence'),
    ('bkb', 'poly', '{"confidence": "ay"}', '22023 invalid setting "confidence": does not apply to this policy, kernel and confidence'),
    ('bkb', 'poly', '{"confidence": "cmm"}', '22023 invalid setting "confidence": does not apply to this policy, kernel and confidence'),
    ('bkb', 'poly', '{"confidence": "dmm"}', '22023 invalid setting "confidence": does not apply to this policy, kernel and confidence'),
    ('bkb', 'poly', '{"confidence": "igp"}', '22023 invalid setting "confidence": does not apply to this policy, kernel and confidence'),
    ('bkb', 'poly', '{"restart_every": 50}', '22023 invalid setting "restart_every": does not apply to this policy, kernel and confidence'),
    ('bkb', 'poly', '{}', 'adaptive_beta alpha budget cap cost_weight degree delta eta gamma intercept noise normalize offset qbar reward_max reward_min rkhs_bound'),
    ('bkb', 'linear', '{"budget": 10}', 'adaptive_beta alpha budget cap cost_weight delta eta intercept noise normalize pace pending_horizon qbar reward_max reward_min rkhs_bound'),
    ('bkb', 'linear', '{"clock": "selector", "discount": 0.9}', '22023 invalid setting "discount": does not apply to this policy, kernel and confidence'),
    ('bkb', 'linear', '{"clock": "time", "half_life": "1 day"}', '22023 invalid setting "half_life": does not apply to this policy, kernel and confidence'),
    ('bkb', 'linear', '{"clock": "time", "window": "1 hour"}', '22023 invalid setting "window": does not apply to this policy, kernel and confidence'),
    ('bkb', 'linear', '{"confidence": "amm"}', '22023 invalid setting "confidence": does not apply to this policy, kernel and confidence'),
    ('bkb', 'linear', '{"confidence": "ay"}', '22023 invalid setting "confidence": does not apply to this policy, kernel and confidence'),
    ('bkb', 'linear', '{"confidence": "cmm"}', '22023 invalid setting "confidence": does not apply to this policy, kernel and confidence'),
    ('bkb', 'linear', '{"confidence": "dmm"}', '22023 invalid setting "confidence": does not apply to this policy, kernel and confidence'),
    ('bkb', 'linear', '{"confidence": "igp"}', '22023 invalid setting "confidence": does not apply to this policy, kernel and confidence'),
    ('bkb', 'linear', '{"restart_every": 50}', '22023 invalid setting "restart_every": does not apply to this policy, kernel and confidence'),
    ('bkb', 'linear', '{}', 'adaptive_beta alpha budget cap cost_weight delta eta intercept noise normalize qbar reward_max reward_min rkhs_bound'),
    ('bkb', 'laplacian', '{"budget": 10}', 'adaptive_beta alpha bandwidth budget cap cost_weight delta eta intercept noise normalize pace pending_horizon qbar reward_max reward_min rkhs_bound'),
    ('bkb', 'laplacian', '{"clock": "selector", "discount": 0.9}', '22023 invalid setting "discount": does not apply to this policy, kernel and confidence'),
    ('bkb', 'laplacian', '{"clock": "time", "half_life": "1 day"}', '22023 invalid setting "half_life": does not apply to this policy, kernel and confidence'),
    ('bkb', 'laplacian', '{"clock": "time", "window": "1 hour"}', '22023 invalid setting "window": does not apply to this policy, kernel and confidence'),
    ('bkb', 'laplacian', '{"confidence": "amm"}', '22023 invalid setting "confidence": does not apply to this policy, kernel and confidence'),
    ('bkb', 'laplacian', '{"confidence": "ay"}', '22023 invalid setting "confidence": does not apply to this policy, kernel and confidence'),
    ('bkb', 'laplacian', '{"confidence": "cmm"}', '22023 invalid setting "confidence": does not apply to this policy, kernel and confidence'),
    ('bkb', 'laplacian', '{"confidence": "dmm"}', '22023 invalid setting "confidence": does not apply to this policy, kernel and confidence'),
    ('bkb', 'laplacian', '{"confidence": "igp"}', '22023 invalid setting "confidence": does not apply to this policy, kernel and confidence'),
    ('bkb', 'laplacian', '{"restart_every": 50}', '22023 invalid setting "restart_every": does not apply to this policy, kernel and confidence'),
    ('bkb', 'laplacian', '{}', 'adaptive_beta alpha bandwidth budget cap cost_weight delta eta intercept noise normalize qbar reward_max reward_min rkhs_bound'),
    ('bkb', 'matern', '{"budget": 10}', 'adaptive_beta alpha bandwidth budget cap cost_weight delta eta intercept noise normalize nu pace pending_horizon qbar reward_max reward_min rkhs_bound'),
    ('bkb', 'matern', '{"clock": "selector", "discount": 0.9}', '22023 invalid setting "discount": does not apply to this policy, kernel and confidence'),
    ('bkb', 'matern', '{"clock": "time", "half_life": "1 day"}', '22023 invalid setting "half_life": does not apply to this policy, kernel and confidence'),
    ('bkb', 'matern', '{"clock": "time", "window": "1 hour"}', '22023 invalid setting "window": does not apply to this policy, kernel and confidence'),
    ('bkb', 'matern', '{"confidence": "amm"}', '22023 invalid setting "confidence": does not apply to this policy, kernel and confidence'),
    ('bkb', 'matern', '{"confidence": "ay"}', '22023 invalid setting "confidence": does not apply to this policy, kernel and confidence'),
    ('bkb', 'matern', '{"confidence": "cmm"}', '22023 invalid setting "confidence": does not apply to this policy, kernel and confidence'),
    ('bkb', 'matern', '{"confidence": "dmm"}', '22023 invalid setting "confidence": does not apply to this policy, kernel and confidence'),
    ('bkb', 'matern', '{"confidence": "igp"}', '22023 invalid setting "confidence": does not apply to this policy, kernel and confidence'),
    ('bkb', 'matern', '{"restart_every": 50}', '22023 invalid setting "restart_every": does not apply to this policy, kernel and confidence'),
    ('bkb', 'matern', '{}', 'adaptive_beta alpha bandwidth budget cap cost_weight delta eta intercept noise normalize nu qbar reward_max reward_min rkhs_bound'),
    ('lin_ucb', NULL, '{"budget": 10}', 'alpha budget codebook codebook_shrink confidence cost_weight discount eta exploration intercept noise_prior normalize pace pending_horizon restart_every reward_max reward_min share window'),
    ('lin_ucb', NULL, '{"clock": "selector", "discount": 0.9}', 'alpha budget clock codebook codebook_shrink confidence cost_weight discount eta exploration intercept noise_prior normalize restart_every reward_max reward_min share window'),
    ('lin_ucb', NULL, '{"clock": "time", "half_life": "1 day"}', 'alpha budget cap clock codebook codebook_shrink confidence cost_weight eta exploration half_life intercept noise_prior normalize restart_every reward_max reward_min share window'),
    ('lin_ucb', NULL, '{"clock": "time", "window": "1 hour"}', 'alpha budget cap clock codebook codebook_shrink confidence cost_weight eta exploration half_life intercept noise_prior normalize restart_every reward_max reward_min share window'),
    ('lin_ucb', NULL, '{"confidence": "amm"}', 'alpha budget codebook codebook_shrink confidence cost_weight delta discount intercept noise normalize restart_every reward_max reward_min rkhs_bound window'),
    ('lin_ucb', NULL, '{"confidence": "ay"}', 'alpha budget codebook codebook_shrink confidence cost_weight delta discount intercept noise normalize restart_every reward_max reward_min rkhs_bound window'),
    ('lin_ucb', NULL, '{"confidence": "cmm"}', 'alpha budget codebook codebook_shrink confidence cost_weight delta discount grid intercept noise normalize restart_every reward_max reward_min rkhs_bound window'),
    ('lin_ucb', NULL, '{"confidence": "dmm"}', 'alpha budget codebook codebook_shrink confidence cost_weight delta discount grid intercept noise normalize restart_every reward_max reward_min rkhs_bound window'),
    ('lin_ucb', NULL, '{"confidence": "igp"}', 'budget codebook codebook_shrink confidence cost_weight delta discount horizon intercept noise normalize restart_every reward_max reward_min rkhs_bound window'),
    ('lin_ucb', NULL, '{"restart_every": 50}', 'alpha budget clock codebook codebook_shrink confidence cost_weight discount eta exploration intercept noise_prior normalize restart_every reward_max reward_min share window'),
    ('lin_ucb', NULL, '{}', 'alpha budget codebook codebook_shrink confidence cost_weight discount eta exploration intercept noise_prior normalize restart_every reward_max reward_min share window'),
    ('greedy', NULL, '{"budget": 10}', 'budget cost_weight discount pace pending_horizon restart_every reward_max reward_min window'),
    ('greedy', NULL, '{"clock": "selector", "discount": 0.9}', 'budget clock cost_weight discount restart_every reward_max reward_min window'),
    ('greedy', NULL, '{"clock": "time", "half_life": "1 day"}', 'budget cap clock cost_weight half_life restart_every reward_max reward_min window'),
    ('greedy', NULL, '{"clock": "time", "window": "1 hour"}', 'budget cap clock cost_weight half_life restart_every reward_max reward_min window'),
    ('greedy', NULL, '{"confidence": "amm"}', '22023 invalid setting "confidence": does not apply to this policy, kernel and confidence'),
    ('greedy', NULL, '{"confidence": "ay"}', '22023 invalid setting "confidence": does not apply to this policy, kernel and confidence'),
    ('greedy', NULL, '{"confidence": "cmm"}', '22023 invalid setting "confidence": does not apply to this policy, kernel and confidence'),
    ('greedy', NULL, '{"confidence": "dmm"}', '22023 invalid setting "confidence": does not apply to this policy, kernel and confidence'),
    ('greedy', NULL, '{"confidence": "igp"}', '22023 invalid setting "confidence": does not apply to this policy, kernel and confidence'),
    ('greedy', NULL, '{"restart_every": 50}', 'budget clock cost_weight discount restart_every reward_max reward_min window'),
    ('greedy', NULL, '{}', 'budget cost_weight discount restart_every reward_max reward_min window'),
    ('random', NULL, '{"budget": 10}', 'budget cost_weight pace pending_horizon reward_max reward_min'),
    ('random', NULL, '{"clock": "selector", "discount": 0.9}', '22023 invalid setting "discount": does not apply to this policy, kernel and confidence'),
    ('random', NULL, '{"clock": "time", "half_life": "1 day"}', '22023 invalid setting "half_life": does not apply to this policy, kernel and confidence'),
    ('random', NULL, '{"clock": "time", "window": "1 hour"}', '22023 invalid setting "window": does not apply to this policy, kernel and confidence'),
    ('random', NULL, '{"confidence": "amm"}', '22023 invalid setting "confidence": does not apply to this policy, kernel and confidence'),
    ('random', NULL, '{"confidence": "ay"}', '22023 invalid setting "confidence": does not apply to this policy, kernel and confidence'),
    ('random', NULL, '{"confidence": "cmm"}', '22023 invalid setting "confidence": does not apply to this policy, kernel and confidence'),
    ('random', NULL, '{"confidence": "dmm"}', '22023 invalid setting "confidence": does not apply to this policy, kernel and confidence'),
    ('random', NULL, '{"confidence": "igp"}', '22023 invalid setting "confidence": does not apply to this policy, kernel and confidence'),
    ('random', NULL, '{"restart_every": 50}', '22023 invalid setting "restart_every": does not apply to this policy, kernel and confidence'),
    ('random', NULL, '{}', 'budget cost_weight reward_max reward_min');
UPDATE recorded r
   SET keys = (SELECT string_agg(k, ' ' ORDER BY k) FROM unnest(string_to_array(r.keys, ' ') || 'tag_buckets'::text) k)
 WHERE r.policy NOT IN ('greedy', 'random') AND r.keys !~ '^[0-9A-Z]{5} ';

SELECT is((SELECT count(*) FROM recorded r JOIN model_select.policies() p ON p.name = r.policy
            WHERE (r.kernel IS NULL AND cardinality(p.kernels) = 0) OR r.kernel = ANY (p.kernels)),
          (SELECT count(*) FROM recorded),
          'every recorded case is a registered policy with no kernel or one it takes');
SELECT set_eq($$SELECT policy, kernel, settings, pg_temp.keys_or_error(policy, kernel, settings) FROM recorded$$,
              $$SELECT policy, kernel, settings, keys FROM recorded$$,
              'resolve_settings() gives the recorded keys (or error) for every policy, kernel and settings');
SELECT set_eq($$SELECT name, unnest(settings) FROM model_select.policies()$$,
              $$SELECT name, jsonb_object_keys(model_select.resolve_settings(name, NULL, '{}'))
                  FROM model_select.policies()$$,
              'policies().settings are the keys of resolve_settings(policy, NULL, ''{}'')');
SELECT is_empty($$SELECT name, k FROM model_select.policies(), unnest(own_settings) k WHERE k <> ALL (settings)$$,
                'every key a policy declares as its own applies to it');

SELECT * FROM finish();
ROLLBACK;
