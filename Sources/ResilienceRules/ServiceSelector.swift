public import ResilienceCore

/// Names a set of services in a policy: `*`, a family (`subscription`, `call`), or a family with
/// attributes (`subscription.presence-others`, `call.held`, `call.outgoing`, `call.incoming.alerting`).
///
/// Invariant: `name` round-trips through ``init(name:)``, and a more specific selector has a higher
/// ``specificity``. For calls a state outranks a direction, so `call.held` beats `call.outgoing`.
public struct ServiceSelector: Hashable, Sendable, Comparable, CustomStringConvertible {
    public enum Family: String, Hashable, Sendable, CaseIterable {
        case registration
        case subscription
        case call
        case presencePublish = "presence-publish"
        case http
    }

    /// Nil means every service (`*`).
    public var family: Family?
    public var package: EventPackage?
    public var direction: CallDirection?
    public var callState: CallState?

    public init(
        family: Family? = nil, package: EventPackage? = nil, direction: CallDirection? = nil,
        callState: CallState? = nil
    ) {
        self.family = family
        self.package = package
        self.direction = direction
        self.callState = callState
    }

    public static let any = ServiceSelector()
    public static let registration = ServiceSelector(family: .registration)
    public static let subscription = ServiceSelector(family: .subscription)
    public static let call = ServiceSelector(family: .call)
    public static let presencePublish = ServiceSelector(family: .presencePublish)
    public static let http = ServiceSelector(family: .http)
    public static func subscription(_ package: EventPackage) -> Self { Self(family: .subscription, package: package) }
    public static func call(_ state: CallState) -> Self { Self(family: .call, callState: state) }
    public static func call(_ direction: CallDirection) -> Self { Self(family: .call, direction: direction) }

    /// The most specific selector that names exactly this kind.
    public init(exactly kind: ServiceKind) {
        switch kind {
        case .registration: self.init(family: .registration)
        case .subscription(let p): self.init(family: .subscription, package: p)
        case .call(let d, let s): self.init(family: .call, direction: d, callState: s)
        case .presencePublish: self.init(family: .presencePublish)
        case .http: self.init(family: .http)
        }
    }

    /// Parses a policy-file name; nil when it names nothing.
    public init?(name: String) {
        if name == "*" {
            self.init()
            return
        }
        let parts = name.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard let family = Family(rawValue: parts[0]) else { return nil }
        switch (family, parts.count) {
        case (_, 1):
            self.init(family: family)
        case (.subscription, 2):
            guard let p = EventPackage(rawValue: parts[1]) else { return nil }
            self.init(family: .subscription, package: p)
        case (.call, 2):
            if let d = CallDirection(rawValue: parts[1]) {
                self.init(family: .call, direction: d)
            } else if let s = CallState(rawValue: parts[1]) {
                self.init(family: .call, callState: s)
            } else {
                return nil
            }
        case (.call, 3):
            guard let d = CallDirection(rawValue: parts[1]), let s = CallState(rawValue: parts[2]) else { return nil }
            self.init(family: .call, direction: d, callState: s)
        default:
            return nil
        }
    }

    /// The policy-file name.
    public var name: String {
        guard let family else { return "*" }
        var parts = [family.rawValue]
        if let package { parts.append(package.rawValue) }
        if let direction { parts.append(direction.rawValue) }
        if let callState { parts.append(callState.rawValue) }
        return parts.joined(separator: ".")
    }

    public var description: String { name }

    /// Higher wins when several level rows match one service.
    public var specificity: Int {
        guard family != nil else { return 0 }
        var score = 1
        if package != nil { score += 2 }
        if direction != nil { score += 1 }
        if callState != nil { score += 2 }
        return score
    }

    /// Whether the selector names this kind of service.
    public func matches(_ kind: ServiceKind) -> Bool {
        guard let family else { return true }
        switch kind {
        case .registration: return family == .registration
        case .subscription(let p): return family == .subscription && (package == nil || package == p)
        case .call(let d, let s):
            return family == .call && (direction == nil || direction == d) && (callState == nil || callState == s)
        case .presencePublish: return family == .presencePublish
        case .http: return family == .http
        }
    }

    /// Whether some service kind matches both selectors.
    public func overlaps(_ other: ServiceSelector) -> Bool {
        ServiceKind.representatives.contains { matches($0) && other.matches($0) }
    }

    /// Every valid selector name, for hints.
    public static var allNames: [String] {
        var names = ["*"] + Family.allCases.map(\.rawValue)
        names += EventPackage.allCases.map { "subscription.\($0.rawValue)" }
        names += CallDirection.allCases.map { "call.\($0.rawValue)" }
        names += CallState.allCases.map { "call.\($0.rawValue)" }
        names += ServiceKind.representatives.compactMap { kind in
            if case .call = kind { ServiceSelector(exactly: kind).name } else { nil }
        }
        return names
    }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.name < rhs.name }
}

extension ServiceKind {
    /// One of every kind: registration, each subscription package, calls in each direction and
    /// state, presence publish, HTTP. Finite, so selector overlap is decidable.
    public static let representatives: [ServiceKind] =
        [.registration] + EventPackage.allCases.map { .subscription($0) }
        + CallDirection.allCases.flatMap { d in CallState.allCases.map { .call(d, $0) } }
        + [.presencePublish, .http]
}
