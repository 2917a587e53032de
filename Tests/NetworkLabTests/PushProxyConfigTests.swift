import Foundation
import Testing

@testable import NetworkLab

/// The registrar's push proxy configuration and the push service's reading of requests, without
/// namespaces: the text Kamailio gets, and what the service lets through to a command line.
struct PushProxyConfigTests {
    static func render(pushService: String?) -> String {
        RegistrarConfig.render(
            address4: "198.18.0.1", address6: nil, port: 5060, directory: "/tmp/nr-test", modules: "/usr/lib/kamailio",
            digestAlgorithm: "", pushService: pushService)
    }

    @Test func withoutAPushServiceNoPlaceholderOrPushModuleIsLeft() {
        let text = Self.render(pushService: nil)
        #expect(!text.contains("@PUSH"))
        #expect(!text.contains("tsilo") && !text.contains("msilo") && !text.contains("http_client"))
    }

    @Test func withAPushServiceTheProxyHoldsInvitesStoresMessagesAndAsksTheService() {
        let text = Self.render(pushService: "198.18.0.1:8088")
        // Every placeholder filled (the `# @RELAY_…@` and `# @NAT_…@` comments are the media relay's and the NAT
        // options', filled by their own renderers).
        #expect(text.range(of: "@(?!RELAY_|NAT_)[A-Z0-9_]+@", options: .regularExpression) == nil)
        for needle in [
            "loadmodule \"tsilo.so\"", "loadmodule \"msilo.so\"", "loadmodule \"http_client.so\"",
            "ts_store(\"sip:$rU@$rd\")", "ts_append(\"location\", \"$tu\")", "m_dump()", "m_store(\"$ru\")",
            "http://198.18.0.1:8088/push?account=$rU&kind=$var(kind)&prid=$var(prid)",
            "modparam(\"msilo\", \"outbound_proxy\", \"sip:198.18.0.1:5060\")", "route[PUSH_INVITE]",
            "route(PUSH_BINDING);", "http://198.18.0.1:8088/binding?account=$tU&expires=$var(left)&prid=$var(prid)",
        ] {
            #expect(text.contains(needle), "missing \(needle)")
        }
    }

    @Test func onlyAnIPv4AddressAndPortIsAcceptedAsThePushService() {
        #expect(RegistrarOptions.isServiceAddress("198.18.0.1:8088"))
        for bad in ["198.18.0.1", "198.18.0.1:0", "host:80", "1.2.3.4:80\");", "[2001:db8::1]:80", "1.2.3.256:80"] {
            #expect(!RegistrarOptions.isServiceAddress(bad), "\(bad)")
        }
    }

    @Test func theServiceTakesOnlyWellFormedPushRequests() {
        let good = LabPushService.parse(
            "GET /push?account=alice&kind=call&prid=f00d:1 HTTP/1.1\r\nHost: x\r\n\r\n", at: 1)
        #expect(good?.account == "alice" && good?.kind == "call" && good?.token == "f00d:1")
        for bad in [
            "POST /push?account=alice&kind=call HTTP/1.1\r\n\r\n", "GET /push?account=alice&kind=sms HTTP/1.1\r\n\r\n",
            "GET /push?account=al;rm%20-rf&kind=call HTTP/1.1\r\n\r\n", "GET /push?kind=call HTTP/1.1\r\n\r\n",
            "GET /push?account=\(String(repeating: "a", count: 65))&kind=call HTTP/1.1\r\n\r\n", "garbage",
        ] {
            #expect(LabPushService.parse(bad, at: 1) == nil, "\(bad)")
        }
    }

    @Test func theServiceTakesOnlyWellFormedBindingReports() {
        let good = LabPushService.parseBinding(
            "GET /binding?account=alice&expires=57&prid=f00d:1 HTTP/1.1\r\nHost: x\r\n\r\n", at: 1)
        #expect(good == LabPushService.Binding(account: "alice", expires: 57, token: "f00d:1", at: 1))
        let huge = LabPushService.parseBinding("GET /binding?account=a&expires=999999999&prid= HTTP/1.1\r\n\r\n", at: 1)
        #expect(huge?.expires == 86_400 && huge?.token == "")
        for bad in [
            "GET /binding?account=alice&prid=x HTTP/1.1\r\n\r\n",
            "GET /binding?account=alice&expires=1e3 HTTP/1.1\r\n\r\n",
            "GET /binding?account=a;b&expires=5 HTTP/1.1\r\n\r\n",
            "GET /binding?account=a&expires=5&prid=%0a HTTP/1.1\r\n\r\n",
            "GET /push?account=alice&kind=call HTTP/1.1\r\n\r\n",
        ] {
            #expect(LabPushService.parseBinding(bad, at: 1) == nil, "\(bad)")
        }
    }

    /// RFC 8599 §4.1: the refresh push comes before the binding expires, never at or after it.
    @Test func theRefreshPushIsMadeBeforeTheBindingExpires() {
        #expect(LabPushService.refreshDelay(expires: 3600, lead: nil) == .seconds(3540))
        #expect(LabPushService.refreshDelay(expires: 60, lead: nil) == .seconds(40))
        #expect(LabPushService.refreshDelay(expires: 60, lead: .seconds(50)) == .seconds(10))
        #expect(LabPushService.refreshDelay(expires: 60, lead: .seconds(600)) == .seconds(1))
        #expect(LabPushService.refreshDelay(expires: -1, lead: nil) == .seconds(1))
    }
}
