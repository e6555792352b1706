-- task: ods_to_dwd_events
-- owner: data-platform
-- vars: date=2024-01-31
SET hive.exec.dynamic.partition.mode=nonstrict;
SET hivevar:src_db=ods;
ADD JAR hdfs:///libs/udf-common.jar;
USE ${src_db};

CREATE TEMPORARY VIEW events_today AS
SELECT e.event_id, e.user_id, e.app, e.region, e.event_type,
       get_json_object(e.payload, '$.page.name') AS page,
       e.duration_ms
FROM app_event_log e
WHERE e.dt = '${date}' AND e.app IN ('douyin', 'toutiao');

FROM events_today t
LEFT JOIN user_profile p ON t.user_id = p.user_id AND p.dt = '${date}'
INSERT OVERWRITE TABLE dwd.user_event_di PARTITION (dt = '${date}')
SELECT t.event_id, t.user_id, t.app, t.region, t.event_type, t.page, t.duration_ms,
       lower(substr(p.email, instr(p.email, '@') + 1))
INSERT OVERWRITE TABLE dwd.user_contact_df PARTITION (dt = '${date}')
SELECT p.user_id, p.email, sha2(p.phone, 256), coalesce(p.city, 'unknown')
WHERE t.event_type = 'login';
