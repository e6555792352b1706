-- task: dwd_to_dws_stats
-- owner: growth
-- vars: date=2024-01-31
WITH ranked AS (
  SELECT user_id, app, page, duration_ms,
         row_number() OVER (PARTITION BY user_id, app ORDER BY duration_ms DESC) AS rn
  FROM dwd.user_event_di
  WHERE dt = '${date}'
)
INSERT OVERWRITE TABLE dws.user_app_stats_1d PARTITION (dt = '${date}')
SELECT user_id, app, count(1), sum(duration_ms), max(CASE WHEN rn = 1 THEN page END)
FROM ranked
GROUP BY user_id, app;

INSERT OVERWRITE TABLE dws.region_daily_users PARTITION (dt = '${date}')
SELECT region, app, count(DISTINCT user_id)
FROM dwd.user_event_di
WHERE dt BETWEEN date_add('${date}', -6) AND '${date}'
GROUP BY region, app
UNION ALL
SELECT 'all' AS region, app, count(DISTINCT user_id)
FROM dwd.user_event_di
WHERE datediff('${date}', dt) < 7
GROUP BY app;
