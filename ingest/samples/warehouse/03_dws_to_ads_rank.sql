-- task: dws_to_ads_rank
-- owner: growth
-- vars: date=2024-01-31
INSERT OVERWRITE TABLE ads.app_user_rank_7d PARTITION (dt = '${date}')
SELECT s.app, s.user_id, c.email, s.duration_7d,
       rank() OVER (PARTITION BY s.app ORDER BY s.duration_7d DESC) AS rank_in_app
FROM (
  SELECT app, user_id, sum(total_duration_ms) AS duration_7d
  FROM dws.user_app_stats_1d
  WHERE dt >= date_sub('${date}', 6)
  GROUP BY app, user_id
) s
JOIN dwd.user_contact_df c ON s.user_id = c.user_id AND c.dt = '${date}'
WHERE s.app = 'douyin';
