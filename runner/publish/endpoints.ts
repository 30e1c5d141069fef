// Where the store clients send their requests. The defaults are the stores' own API hosts; the
// ROOST_TEST_* variables point a runner at the stand-ins of tests/support/store-stand-ins/ and
// are for tests only (docs/publishing.md "Testing"): nothing else needs them, and a production
// runner must not have them set. Google's token endpoint is not here: it is the token_uri of the
// service account's own key, as Google's client libraries use it.

export interface PublishEndpoints {
  /** https://developers.google.com/android-publisher/api-ref/rest */
  androidPublisher: string;
  /** https://firebase.google.com/docs/reference/app-distribution/rest */
  firebaseAppDistribution: string;
  /** https://developer.apple.com/documentation/appstoreconnectapi */
  appStoreConnect: string;
  /** The command that uploads an IPA: Apple's altool through xcrun. */
  altool: string[];
}

export const STORE_ENDPOINTS: PublishEndpoints = {
  androidPublisher: "https://androidpublisher.googleapis.com",
  firebaseAppDistribution: "https://firebaseappdistribution.googleapis.com",
  appStoreConnect: "https://api.appstoreconnect.apple.com",
  altool: ["xcrun", "altool"],
};

/** The stores' hosts, or the test stand-ins the ROOST_TEST_* variables name. */
export function publishEndpointsFrom(env: Record<string, string | undefined>): PublishEndpoints {
  return {
    androidPublisher: env.ROOST_TEST_ANDROID_PUBLISHER_URL || STORE_ENDPOINTS.androidPublisher,
    firebaseAppDistribution: env.ROOST_TEST_FIREBASE_APP_DISTRIBUTION_URL || STORE_ENDPOINTS.firebaseAppDistribution,
    appStoreConnect: env.ROOST_TEST_APP_STORE_CONNECT_URL || STORE_ENDPOINTS.appStoreConnect,
    altool: env.ROOST_TEST_ALTOOL ? [env.ROOST_TEST_ALTOOL] : STORE_ENDPOINTS.altool,
  };
}

/** The test overrides that are set, for one warning line in every publish's log. */
export function testOverridesSet(env: Record<string, string | undefined>): string[] {
  return ["ROOST_TEST_ANDROID_PUBLISHER_URL", "ROOST_TEST_FIREBASE_APP_DISTRIBUTION_URL", "ROOST_TEST_APP_STORE_CONNECT_URL", "ROOST_TEST_ALTOOL"].filter(
    (k) => env[k],
  );
}
