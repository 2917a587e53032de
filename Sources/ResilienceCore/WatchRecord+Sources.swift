extension WatchRecord {
    /// The record of a path transition; `seq` counts transitions from 1.
    public init(_ transition: PathTransition, seq: UInt64) {
        let path = transition.path
        let previous = transition.previous
        let primary = path.primaryInterface ?? previous?.primaryInterface
        self.init(
            at: transition.at, seq: seq, kind: .transition, event: "", iface: primary?.name,
            ifindex: primary?.ifindex, from: nil, to: nil, reason: nil,
            addresses: path.addresses.map(\.description), synthesized: false, downtimeMilliseconds: nil)
        switch transition.kind {
        case .initial:
            event = "initial"
            to = path.statusWord
            if case .unsatisfied(let why) = path.status { reason = why.rawValue }
        case .lost(let why):
            event = "lost"
            (from, to, reason) = ("satisfied", "unsatisfied", why.rawValue)
            iface = previous?.primaryInterface?.name ?? iface
            ifindex = previous?.primaryInterface?.ifindex ?? ifindex
        case .restored(let downtime):
            event = "restored"
            (from, to) = ("unsatisfied", "satisfied")
            downtimeMilliseconds = downtime.nanosecondsValue / 1_000_000
        case .changed(let change):
            event = "changed"
            reason = change.rawValue
            switch change {
            case .interfaceSwitched:
                (from, to) = (previous?.primaryInterface?.name, path.primaryInterface?.name)
            case .address:
                from = previous.map { $0.addresses.map(\.description).joined(separator: ",") }
                to = path.addresses.map(\.description).joined(separator: ",")
            case .defaultRoute:
                from = previous?.defaultRoutes.first?.description
                to = path.defaultRoutes.first?.description
            }
        }
    }

    /// The record of a raw event; `name(ifindex)` resolves interface names for address and route
    /// events, which carry only the index.
    public init(_ event: NetworkEvent, name: (Int32) -> String?) {
        self.init(
            at: event.at, seq: event.seq, kind: .event, event: "", iface: event.ifindex.flatMap(name),
            ifindex: event.ifindex, from: nil, to: nil, reason: nil, addresses: [],
            synthesized: event.synthesized, downtimeMilliseconds: nil)
        switch event.kind {
        case .linkAdded(let link):
            (self.event, iface, to) = ("link-added", link.name, link.carrier.rawValue)
        case .linkChanged(let old, let new):
            self.event = "link-changed"
            iface = new.name
            (reason, from, to) = Self.linkChange(old, new)
        case .linkRemoved(let link):
            (self.event, iface, from) = ("link-removed", link.name, link.carrier.rawValue)
        case .addressAdded(let a):
            (self.event, addresses) = ("address-added", [a.description])
        case .addressChanged(let old, let new):
            (self.event, addresses, from, to) = ("address-changed", [new.description], old.flagWords, new.flagWords)
        case .addressRemoved(let a):
            (self.event, addresses) = ("address-removed", [a.description])
        case .defaultRouteAdded(let r):
            (self.event, to, reason) = ("default-route-added", r.gateway, "metric \(r.metric)")
        case .defaultRouteRemoved(let r):
            (self.event, from, reason) = ("default-route-removed", r.gateway, "metric \(r.metric)")
        case .resynced:
            self.event = "resynced"
        }
    }

    /// Which facet of a link changed, most telling first.
    private static func linkChange(_ old: LinkState, _ new: LinkState) -> (String, String, String) {
        if old.name != new.name { return ("renamed", old.name, new.name) }
        if old.carrier != new.carrier { return ("carrier", old.carrier.rawValue, new.carrier.rawValue) }
        if old.operState != new.operState { return ("operstate", old.operState.description, new.operState.description) }
        if old.carrierChanges != new.carrierChanges {
            return ("carrier-changes", String(old.carrierChanges ?? 0), String(new.carrierChanges ?? 0))
        }
        return ("flags", "0x" + String(old.flags, radix: 16), "0x" + String(new.flags, radix: 16))
    }
}

extension InterfaceAddress {
    fileprivate var flagWords: String {
        isDadFailed ? "dadfailed" : isTentative ? "tentative" : "usable"
    }
}
