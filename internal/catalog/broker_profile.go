package catalog

// CapBrokerInspect: the kit can read a topic's and a consumer's settings
// from the server by name, without changing them.
const CapBrokerInspect Capability = "inspect"

const srcNATSInfo = "NATS docs, JetStream stream and consumer configuration ($JS.API.STREAM.INFO, $JS.API.CONSUMER.INFO: duplicate_window, retention, max_age, storage, num_replicas, ack_policy, ack_wait, backoff, max_deliver)"

// BR-6.1 is MUST because a certification is a statement about a declared
// configuration: where the server runs other settings than the team
// declared, every other verdict of the run, and every hazard the plan
// computed from the declaration, describes a pipeline that does not exist,
// so a mismatch must gate like a failed requirement.
func init() {
	Add(
		br("BR-6.1", Must, Characterization, "the declared stream and consumer settings are the server's",
			"这些对照只建立读者的抽象坐标，具体持久、保留、重试次数/间隔、同组再平衡、重复检测都要按所选产品版本与配置核对。 "+
				"The kit reads each declared stream and consumer from the server by name (read only) and compares every declared setting "+
				"(de-dupe window, retention, max age, storage, replicas, ack policy, ack wait, back-off, max deliver) with the server's, side by side; "+
				"one difference fails the rule, because the other verdicts and the plan's arithmetic would then be about a configuration the server does not run. "+
				"Without a profile it checks the same of the kit's own scratch stream: what the client asked for is what the server holds.",
			seedBR+", 六、broker 各有自己的确认词; "+srcNATSInfo, CapBrokerInspect),
	)
}
