package main

const (
	hubgo       = "internal/api/hub.go"
	streamgo    = "internal/api/stream.go"
	apigo       = "internal/api/api.go"
	auditread   = "internal/ledger/auditread.go"
	watchgo     = "internal/apiclient/watch.go"
	servetls    = "internal/serve/tls.go"
	installsgo  = "internal/installs/installs.go"
	repoevent   = "internal/ghevents/repository.go"
	configgo    = "internal/config/config.go"
	webhookfree = "internal/worker/webhooktofree.go"
	redisup     = "internal/redisavail/up.go"
)

// sessionMutants break the watch stream (server and client), the audit
// reads under it, the TLS reload, the record of a renamed repository, the
// claims API URL's plain-HTTP exception and two metrics.
var sessionMutants = []Mutant{
	// The watch stream.
	{ID: "EV01", File: streamgo, Tests: "^TestEventsResumeAfterAnyIDExactlyOnce$|^TestEventsResumeWhileWritingHasNoGapOrDuplicate$",
		Old: "if !st.last.Before(c.id) || (st.repo", New: "if (st.repo", Desc: "a change the backlog already sent is sent again from the hub's batch"},
	{ID: "EV02", File: streamgo, Tests: "^TestStreamReadsTheGapBeforeABatch$",
		Old: "if st.last.Before(b.from) || b.gap {", New: "if false {", Desc: "a batch starting past the watcher's place is sent without reading the gap"},
	{ID: "EV03", File: streamgo, Tests: "^TestEventsResetWhenTheStreamWasTrimmed$",
		Old: "if err == nil && rd.Gap && !st.emptyAtZero {", New: "if false {", Desc: "a resume id the stream no longer holds resumes silently, without a reset"},
	{ID: "EV04", File: streamgo, Tests: "^TestEventsWatchOneRepository$",
		Old: "(st.repo != \"\" && !strings.EqualFold(c.repo, st.repo))", New: "false", Desc: "a watcher of one repository gets every repository's changes"},
	{ID: "EV05", File: apigo, Tests: "^TestEventsWatcherCapApartFromRequestsInFlight$",
		Old: "\t\tif e.stream {\n", New: "\t\tif false {\n", Desc: "watchers take the places of ordinary requests in flight"},
	{ID: "EV06", File: hubgo, Tests: "^TestEventsSlowWatcherIsDisconnectedWithoutHoldingUpOthers$",
		Old: "w := &watcher{ch: make(chan *batch, h.buffer)}", New: "w := &watcher{ch: make(chan *batch, 1<<16)}", Desc: "a slow watcher's buffer is unbounded: it is never disconnected"},
	{ID: "EV07", File: streamgo, Tests: "^TestEventsHeartbeatInSilence$",
		Old: "st.write([]byte(\": ping\\n\\n\"))", New: "st.write(nil)", Desc: "no ping in a silence"},
	{ID: "EV08", File: streamgo, Tests: "^TestEventsHeartbeatInSilence$",
		Old: "st.beat.Reset(st.s.heartbeat) // a ping", New: "_ = st.s.heartbeat // a ping", Desc: "a ping does not restart the heartbeat: only the first silence gets one"},
	{ID: "EV09", File: hubgo, Tests: "^TestEventsSlowWatcherIsDisconnectedWithoutHoldingUpOthers$",
		Old: "\t\t\tdelete(h.subs, w)\n\t\t\tw.dropped.Store(true)\n\t\t\tclose(w.ch)\n", New: "\t\t\t_ = w\n", Desc: "a watcher whose buffer is full silently misses the batch"},
	{ID: "EV10", File: streamgo, Tests: "^TestEventsResetWhenTheStreamWasEmptied$",
		Old: "st.last, st.emptyAtZero = *after, false", New: "st.last, st.emptyAtZero = *after, true", Desc: "a resume id on an emptied stream resumes silently, without a reset"},
	{ID: "EV11", File: streamgo, Tests: "^TestEventsResumeAfterAnyIDExactlyOnce$",
		Old: "\t\tst.last, st.emptyAtZero = *after, false\n", New: "\t\t_ = after\n", Desc: "a resume starts at the newest entry, losing the changes after the resume id"},
	{ID: "EV12", File: streamgo, Tests: "^TestEventsResumeWhileWritingHasNoGapOrDuplicate$",
		Old: "err != nil || st.err != nil || !st.sub.dropped.Load() {", New: "true {", Desc: "a watcher the hub dropped while it read its backlog is not subscribed again"},
	{ID: "EV13", File: hubgo, Tests: "^TestEventsSendAnUnreadableRowWithClaimErrorAndGoOn$",
		Old: "\t\t\tdefault:\n\t\t\t\ts.log.Error(", New: "\t\t\tdefault:\n\t\t\t\treturn nil, err\n\t\t\t\ts.log.Error(", Desc: "a row that does not decode is retried as an outage: every watcher stalls on it"},
	{ID: "EV14", File: streamgo, Tests: "^TestEventsResetWhenTheStreamWasTrimmed$",
		Old: "\tif held {\n\t\trs.Oldest = oldest.String()\n\t\tbuf.WriteString(\"id: \"", New: "\tif false {\n\t\trs.Oldest = oldest.String()\n\t\tbuf.WriteString(\"id: \"", Desc: "a reset carries no id: a reconnect before the next change is reset again"},
	{ID: "EV15", File: hubgo, Tests: "^TestEventsWatchersInTurnShareOneReader$",
		Old: "\tdelete(h.subs, w)\n}\n", New: "\tdelete(h.subs, w)\n\tif len(h.subs) == 0 {\n\t\th.running = false\n\t}\n}\n", Desc: "the reader is let go as the last watcher leaves: each next watcher starts one more, each holding a blocked connection"},
	{ID: "EV16", File: streamgo, Tests: "^TestEventsShutdownEndsAStreamStuckWriting$",
		Old: "\tst.closing = true\n\t_ = st.rc.SetWriteDeadline(time.Now())\n", New: "", Desc: "a shutdown waits out a stream's write stuck on a client that reads nothing"},

	// The audit reads.
	{ID: "AR01", File: auditread, Tests: "^TestParseAuditIDBounds$",
		Old: "len(s) > 20 ||", New: "len(s) > 30 ||", Desc: "an audit id part padded past 20 digits is read"},
	{ID: "AR03", File: auditread, Tests: "^TestParseAuditIDBounds$",
		Old: "len(s) > 20 ||", New: "len(s) > 19 ||", Desc: "an audit id part of 20 digits (past 2^63) is refused"},
	{ID: "AR02", File: auditread, Tests: "^TestAuditReadsAfterAnID$",
		Old: "\"(\"+after.String()", New: "after.String()", Desc: "AuditAfter includes the entry at the id itself"},
	{ID: "AR04", File: auditread, Tests: "^TestAuditReadsPastAMessageThatIsNoEntry$|^TestEventsGoOnPastAnAuditMessageThatIsNoEntry$",
		Old: "\t\t\tr.Unreadable = append(r.Unreadable, err)\n\t\t\tcontinue\n", New: "\t\t\treturn AuditRead{Last: after}, err\n", Desc: "a message that is no audit entry fails every read at it: the watch stream stops there"},

	// The watch client.
	{ID: "WC01", File: watchgo, Tests: "^TestWatchResumesAcrossARestartWithNothingLostOrTwice$",
		Old: "\t\t\t\tif ev.ID != \"\" {\n\t\t\t\t\tlast = ev.ID\n\t\t\t\t}\n", New: "", Desc: "a reconnect resumes after the first id, not the last change given"},
	{ID: "WC02", File: watchgo, Tests: "^TestWatchResumesAcrossARestartWithNothingLostOrTwice$",
		Old: "req.Header.Set(apiwire.LastEventIDHeader, last)", New: "_ = last", Desc: "a reconnect sends no Last-Event-ID"},
	{ID: "WC03", File: watchgo, Tests: "^TestWatchReturnsPermanentRefusals$",
		Old: "ae.Status/100 == 4 && ae.Status", New: "ae.Status/100 == 6 && ae.Status", Desc: "a 4xx refusal is retried for ever"},
	{ID: "WC04", File: watchgo, Tests: "^TestWatchWaitsOutA429$",
		Old: " && ae.Status != http.StatusTooManyRequests {", New: " {", Desc: "a 429 ends the watch instead of being waited out"},
	{ID: "WC05", File: watchgo, Tests: "^TestWatchBacksOffAStreamThatEndsAtOnce$",
		Old: "\t\tif given {\n", New: "\t\tif given || true {\n", Desc: "a stream that ends at once, with no event, starts the backoff over: asked again every quarter second"},
	{ID: "WC06", File: watchgo, Tests: "^TestWatchResumesAfterAResetsID$",
		Old: "\t\t\tif ev.ID != \"\" {\n", New: "\t\t\tif ev.ID != \"\" && ev.Type == apiwire.EventChange {\n", Desc: "a reconnect after a reset resumes from before it, and is reset again"},

	// TLS.
	{ID: "TL01", File: servetls, Tests: "^TestTLSListenerReloadsItsPairWhenTheFilesChange$",
		Old: "MinVersion: tls.VersionTLS12", New: "MinVersion: tls.VersionTLS10", Desc: "TLS 1.0 and 1.1 clients are served"},
	{ID: "TL02", File: servetls, Tests: "^TestTLSListenerReloadsItsPairWhenTheFilesChange$",
		Old: "if same(now, r.loaded) || same(now, r.failed) {", New: "if true {", Desc: "a renewed pair is never loaded"},
	{ID: "TL03", File: servetls, Tests: "^TestTLSListenerReloadsItsPairWhenTheFilesChange$",
		Old: "\t\tr.failed = now\n", New: "\t\tr.failed = now\n\t\treturn nil, err\n", Desc: "a pair that fails to load stops the serving of the previous one"},

	// A renamed or transferred repository.
	{ID: "MV01", File: installsgo, Tests: "^TestMovedMapsEveryOldNameAtOnce$",
		Old: "if string.lower(all[i+1]) == ARGV[2] then", New: "if false then", Desc: "names before the old one are not mapped to the newest"},
	{ID: "MV02", File: installsgo, Tests: "^TestMovedMapsEveryOldNameAtOnce$",
		Old: "if known == 0 or ARGV[2] == ARGV[4] then", New: "if ARGV[2] == ARGV[4] then", Desc: "an old name never installed is installed and mapped"},
	{ID: "MV03", File: installsgo, Tests: "^TestMovedMapsEveryOldNameAtOnce$",
		Old: "redis.call('HDEL', KEYS[2], ARGV[4])", New: "redis.call('HDEL', KEYS[2], 'none')", Desc: "a name taken back still maps to itself or its last owner"},
	{ID: "RP01", File: repoevent, Tests: "^TestRepositoryMovedIsRecordedAtOnce$",
		Old: "if ev.Action != \"renamed\" && ev.Action != \"transferred\" {", New: "if ev.Action != \"renamed\" {", Desc: "a transfer is ignored until the next sync"},
	{ID: "RP02", File: repoevent, Tests: "^TestRepositoryMovedIsRecordedAtOnce$",
		Old: "\t\tname = c.Repository.Name.From\n", New: "", Desc: "a rename is recorded from the new name to itself"},
	{ID: "RP03", File: repoevent, Tests: "^TestRepositoryTransferredFromAUser$",
		Old: "\t\towner = c.Owner.From.User.Login\n", New: "", Desc: "a transfer from a user is recorded from the new owner"},
	{ID: "RP04", File: repoevent, Tests: "^TestRepositoryMovedIsRecordedAtOnce$",
		Old: "\t\towner = c.Owner.From.Organization.Login\n", New: "", Desc: "a transfer from an organization is recorded from the new owner"},

	// QUEEN_API_URL's plain HTTP.
	{ID: "CF01", File: configgo, Tests: "^TestQueenAPIURLTakesHTTPOnlyOnLoopbackAndInTheCluster$",
		Old: "return labels[2] == \"svc\"", New: "return true", Desc: "any three-label host takes http://"},
	{ID: "CF02", File: configgo, Tests: "^TestQueenAPIURLTakesHTTPOnlyOnLoopbackAndInTheCluster$",
		Old: "return strings.Join(labels[2:], \".\") == \"svc.cluster.local\"", New: "return labels[2] == \"svc\"", Desc: "NAME.NAMESPACE.svc.any.domain takes http://"},
	{ID: "CF03", File: configgo, Tests: "^TestQueenAPIURLTakesHTTPOnlyOnLoopbackAndInTheCluster$",
		Old: "if l == \"\" {", New: "if l == \"-\" {", Desc: "a host with an empty label takes http://"},
	{ID: "CF04", File: configgo, Tests: "^TestQueenAPIURLTakesHTTPOnlyOnLoopbackAndInTheCluster$",
		Old: "!(clusterLocal && ClusterLocal(u.Hostname()))", New: "!ClusterLocal(u.Hostname())", Desc: "GitHub and export URLs at a cluster-local name take http://"},

	// Metrics.
	{ID: "WF01", File: webhookfree, Tests: "^TestWebhookToFreeIsTimedFromTheDelivery$",
		Old: "(outcome != \"freed\" && outcome != \"would_free\")", New: "(outcome != \"freed\")", Desc: "a would_free outcome is not timed"},
	{ID: "WF02", File: webhookfree, Tests: "^TestWebhookToFreeIsTimedFromTheDelivery$",
		Old: "p.ReceivedAt <= 0 || ", New: "", Desc: "a task with no receipt time is timed from 1970"},
	{ID: "WF03", File: webhookfree, Tests: "^TestWebhookToFreeIsTimedFromTheDelivery$",
		Old: "max(d, 0).Seconds()", New: "d.Seconds()", Desc: "a webhook clock ahead of the worker's is observed negative"},
	{ID: "WF04", File: webhookfree, Tests: "^TestWebhookToFreeIsTimedFromTheDelivery$",
		Old: "time.UnixMilli(p.ReceivedAt)", New: "time.Unix(p.ReceivedAt, 0)", Desc: "the receipt time is read as seconds"},
	{ID: "RU01", File: redisup, Tests: "^TestRedisUpFollowsRedis$",
		Old: "if c.ping(ctx) == nil {", New: "if c.ping(ctx) != nil {", Desc: "queen_redis_up is 1 when Redis does not answer"},
	{ID: "RU02", File: redisup, Tests: "^TestRedisUpFollowsRedis$",
		Old: "if c.ping(ctx) == nil {", New: "if c.ping(ctx) == nil || true {", Desc: "queen_redis_up is always 1"},
}
