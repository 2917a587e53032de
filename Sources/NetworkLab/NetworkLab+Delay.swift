extension NetworkLab {
    /// Delays every frame the host end of `link` sends by `delay ± jitter` (seeded, order kept)
    /// for `duration`, without netem: a `clsact` egress filter (u32 match-all, `mirred redirect`)
    /// sends the frames into a private veth pair in the host, whose far end a ``PacketRelay``
    /// reads, holds and writes back out of the link past the qdisc. ARP, ND, UDP, TCP and ICMP are
    /// all delayed; the link's addresses, routes and carrier never change.
    ///
    /// netem is not used even where the kernel has it: its jitter cannot be seeded (`tc` has no
    /// seed option), so a run could not be replayed.
    ///
    /// Invariant: the filter goes before the relay stops (so no frame is redirected to a relay that
    /// no longer reads) and the veth pair goes last; all three are undone on error and cancellation.
    func withDelayRelay(_ link: LabLink, delay: Duration, jitter: Duration, for duration: Duration) async throws {
        guard let tc = LabCommand.tc else { throw error(.unsupported, "delay needs `tc` (iproute2)") }
        let p = plan(link)
        let (inlet, tap) = ("nld\(link.id)a", "nld\(link.id)b")
        try await batch(
            p.hostNamespace,
            [
                "link add \(inlet) type veth peer name \(tap)", "link set \(inlet) addrgenmode none arp off",
                "link set \(tap) addrgenmode none arp off", "link set \(inlet) up", "link set \(tap) up",
            ])
        let line = DelayLine(delay: delay, jitter: jitter, seed: random.next())
        let qdisc = [tc, "-n", p.hostNamespace, "qdisc"]
        let relay: PacketRelay
        do {
            relay = try await PacketRelay.start(namespace: p.hostNamespace, input: tap, output: p.interface, line: line)
        } catch let failure as NetworkLabError {
            _ = try? await ip(["-n", p.hostNamespace, "link", "delete", inlet])
            throw error(failure.code, "the delay relay could not start: \(failure.message)")
        }
        func undo(filter: Bool) async {
            if filter { _ = try? await LabCommand.run(qdisc + ["del", "dev", p.interface, "clsact"], seed: seed) }
            await relay.stop()
            _ = try? await ip(["-n", p.hostNamespace, "link", "delete", inlet])
        }
        do {
            try await LabCommand.run(qdisc + ["add", "dev", p.interface, "clsact"], seed: seed)
            try await LabCommand.run(
                [
                    tc, "-n", p.hostNamespace, "filter", "add", "dev", p.interface, "egress", "protocol", "all", "u32",
                    "match", "u32", "0", "0", "action", "mirred", "egress", "redirect", "dev", inlet,
                ], seed: seed)
        } catch let failure as NetworkLabError {
            await undo(filter: true)
            throw error(
                .unsupported,
                "delay needs tc clsact, u32 and mirred (CONFIG_NET_SCH_INGRESS, CONFIG_NET_CLS_U32,"
                    + " CONFIG_NET_ACT_MIRRED): \(failure.message)")
        }
        record("delay relay on \(p.interface) via \(tap), seeded", backend: .userSpaceRelay)
        do { try await pause(duration) } catch {
            await undo(filter: true)
            throw error
        }
        await undo(filter: true)
        let stats = relay.stats
        record(
            "delay relay forwarded \(stats.forwarded) frames, dropped \(stats.dropped),"
                + " send errors \(stats.sendErrors)", backend: .userSpaceRelay)
    }
}
