import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DockerImage, Duration, Lazy, RemovalPolicy, Stack, Validations, type ILocalBundling } from 'aws-cdk-lib';
import {
  AllowedMethods,
  Distribution,
  HeadersFrameOption,
  HeadersReferrerPolicy,
  HttpVersion,
  PriceClass,
  ResponseHeadersPolicy,
  ViewerProtocolPolicy,
} from 'aws-cdk-lib/aws-cloudfront';
import { S3BucketOrigin } from 'aws-cdk-lib/aws-cloudfront-origins';
import { BlockPublicAccess, Bucket, BucketEncryption, ObjectOwnership, type CfnBucket } from 'aws-cdk-lib/aws-s3';
import { BucketDeployment, CacheControl, Source, type ISource } from 'aws-cdk-lib/aws-s3-deployment';
import { Construct } from 'constructs';
import { consoleContentSecurityPolicy, HSTS_MAX_AGE_SECONDS } from '../../console/security-headers';

/** The repository's root (this file is lib/constructs/console-site.ts). */
const ROOT = join(import.meta.dirname, '..', '..');
/** The page deployed when the console cannot be built at synth (no `console:build` script yet). */
export const CONSOLE_PLACEHOLDER_DIR = join(ROOT, 'lib', 'console-placeholder');

/** What the console reads from `/config.json` (the console contract): written at deploy, from the stack's tokens. */
export interface ConsoleRuntimeConfig {
  readonly apiUrl: string;
  readonly region: string;
  readonly userPoolId: string;
  readonly userPoolClientId: string;
  /** The live updates' MQTT over WebSocket address (`wss://<host>/mqtt`). */
  readonly liveUrl?: string;
}

/**
 * Builds the console at synth on this machine (local bundling, no Docker): `npm run console:build`
 * when package.json has that script (the console's own build, writing `console/dist`), else the
 * placeholder page. Returns whether the real console was built.
 */
export const consoleBundling = (log: (line: string) => void = (line) => process.stderr.write(`${line}\n`)): ILocalBundling & { built?: boolean } => ({
  tryBundle(outputDir: string) {
    const scripts = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts?: Record<string, string> }).scripts ?? {};
    if (scripts['console:build']) {
      execFileSync('npm', ['run', 'console:build'], { cwd: ROOT, stdio: ['ignore', process.stderr, process.stderr] });
      cpSync(join(ROOT, 'console', 'dist'), outputDir, { recursive: true });
      return true;
    }
    log('fleetstream: no `console:build` script: the console bucket gets a placeholder page');
    cpSync(CONSOLE_PLACEHOLDER_DIR, outputDir, { recursive: true });
    return true;
  },
});

/** The console's files, built at synth; `source` replaces them (tests). */
export const consoleSource = (): ISource => {
  // The asset is keyed by its source folder: the console's sources when they exist, else the placeholder's.
  const dir = existsSync(join(ROOT, 'console')) ? join(ROOT, 'console') : CONSOLE_PLACEHOLDER_DIR;
  return Source.asset(dir, {
    exclude: ['node_modules', 'dist', '.vite'],
    bundling: { image: DockerImage.fromRegistry('local-bundling-only'), local: consoleBundling(), command: ['false'] },
  });
};

export interface ConsoleSiteProps {
  /** The built console. @default consoleSource() */
  readonly source?: ISource;
}

/**
 * The console on S3 + CloudFront: a private bucket (public access blocked, TLS only, reachable
 * only by the distribution through origin access control), a distribution serving the single-page
 * app (index.html for the app's own routes), security headers on every answer (a strict
 * Content-Security-Policy whose `connect-src` names what `connectTo` was given, HSTS, nosniff,
 * DENY framing, a referrer policy: console/security-headers.ts), and the build plus `config.json`
 * copied in at deploy. Hashed files under `assets/` are cached for a year; the pages and
 * config.json are revalidated on every load, so a deploy shows at once.
 */
export class ConsoleSite extends Construct {
  readonly bucket: Bucket;
  readonly distribution: Distribution;
  /** `https://<domain>`: the console's address and the API's one CORS origin. */
  readonly url: string;
  readonly securityHeaders: ResponseHeadersPolicy;
  private readonly connectSources: string[] = [];

  constructor(scope: Construct, id: string, props: ConsoleSiteProps) {
    super(scope, id);
    this.bucket = new Bucket(this, 'Bucket', {
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      objectOwnership: ObjectOwnership.BUCKET_OWNER_ENFORCED,
      encryption: BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      // Built files only, rebuilt by every deploy: nothing to keep when the stack goes.
      removalPolicy: RemovalPolicy.DESTROY,
    });
    const headers = new ResponseHeadersPolicy(this, 'SecurityHeaders', {
      comment: 'Fleetstream console: security headers',
      securityHeadersBehavior: {
        // Read at synthesis, once the stack has said what the console calls (connectTo).
        contentSecurityPolicy: {
          contentSecurityPolicy: Lazy.string({ produce: () => consoleContentSecurityPolicy(this.connectSources) }),
          override: true,
        },
        strictTransportSecurity: { accessControlMaxAge: Duration.seconds(HSTS_MAX_AGE_SECONDS), includeSubdomains: true, override: true },
        contentTypeOptions: { override: true },
        frameOptions: { frameOption: HeadersFrameOption.DENY, override: true },
        referrerPolicy: { referrerPolicy: HeadersReferrerPolicy.STRICT_ORIGIN_WHEN_CROSS_ORIGIN, override: true },
        xssProtection: { protection: true, modeBlock: true, override: true },
      },
    });
    this.securityHeaders = headers;
    // The SPA's own routes (`/workspaces/…`) are no objects: S3 answers 403 through OAC (no
    // ListBucket), 404 with it; both become the app's index.html, which routes in the browser.
    const spaFallback = (httpStatus: number) => ({ httpStatus, responseHttpStatus: 200, responsePagePath: '/index.html', ttl: Duration.seconds(0) });
    this.distribution = new Distribution(this, 'Distribution', {
      comment: 'Fleetstream console',
      defaultRootObject: 'index.html',
      defaultBehavior: {
        origin: S3BucketOrigin.withOriginAccessControl(this.bucket),
        viewerProtocolPolicy: ViewerProtocolPolicy.REDIRECT_TO_HTTPS,
        allowedMethods: AllowedMethods.ALLOW_GET_HEAD,
        responseHeadersPolicy: headers,
        compress: true,
      },
      errorResponses: [spaFallback(403), spaFallback(404)],
      httpVersion: HttpVersion.HTTP2_AND_3,
      priceClass: PriceClass.PRICE_CLASS_100,
    });
    this.url = `https://${this.distribution.distributionDomainName}`;

    const source = props.source ?? consoleSource();
    // Three copies, none pruning the others' files: hashed assets (immutable), the pages (revalidated),
    // and config.json from the stack's values (revalidated). Old hashed files stay for pages still open.
    const hashed = new BucketDeployment(this, 'Assets', {
      sources: [source],
      destinationBucket: this.bucket,
      exclude: ['*'],
      include: ['assets/*'],
      prune: false,
      cacheControl: [CacheControl.setPublic(), CacheControl.maxAge(Duration.days(365)), CacheControl.immutable()],
    });
    const pages = new BucketDeployment(this, 'Pages', {
      sources: [source],
      destinationBucket: this.bucket,
      exclude: ['assets/*', 'config.json'],
      prune: false,
      cacheControl: [CacheControl.noCache()],
      distribution: this.distribution,
      distributionPaths: ['/*'],
    });
    pages.node.addDependency(hashed);
    this.acknowledgeFindings();
  }

  /**
   * Lets the console's pages call these origins (`https://host`, tokens welcome) beside its own:
   * the Content-Security-Policy's `connect-src` names exactly what it is given.
   */
  connectTo(...origins: string[]) {
    this.connectSources.push(...origins);
    return this;
  }

  /**
   * Writes the console's runtime configuration as `/config.json` at each deploy, from the stack's
   * values (the API's address, the user pool): the build stays the same for every stack.
   */
  writeConfig(config: ConsoleRuntimeConfig) {
    new BucketDeployment(this, 'Config', {
      sources: [Source.jsonData('config.json', config)],
      destinationBucket: this.bucket,
      prune: false,
      cacheControl: [CacheControl.noCache()],
      contentType: 'application/json',
      distribution: this.distribution,
      distributionPaths: ['/config.json'],
    });
  }

  private acknowledgeFindings() {
    // CDK's one BucketDeployment function per stack (a singleton at the stack's root), run only by CloudFormation during deploys.
    for (const singleton of Stack.of(this).node.children.filter((c) => c.node.id.startsWith('Custom::CDKBucketDeployment'))) {
      Validations.of(singleton).acknowledge(
        {
          id: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]',
          reason: 'CDK’s BucketDeployment function (deploy time only) logs with the AWS managed basic execution role; its code and role are CDK’s own.',
        },
        ...[
          'Action::s3:GetObject*',
          'Action::s3:GetBucket*',
          'Action::s3:List*',
          'Action::s3:DeleteObject*',
          'Action::s3:Abort*',
          'Resource::arn:<AWS::Partition>:s3:::cdk-hnb659fds-assets-<AWS::AccountId>-<AWS::Region>/*',
          `Resource::<${Stack.of(this).getLogicalId(this.bucket.node.defaultChild as CfnBucket)}.Arn>/*`,
          // CloudFront's CreateInvalidation takes no resource-level permission.
          'Resource::*',
        ].map((finding) => ({
          id: `AwsSolutions-IAM5[${finding}]`,
          reason:
            'CDK’s BucketDeployment function copies the console’s files from the CDK asset bucket into the console bucket and invalidates the distribution: these are the grants CDK generates for exactly that, used only during deploys.',
        })),
        {
          id: 'AwsSolutions-L1',
          reason: 'CDK’s BucketDeployment function runs on the Python runtime CDK pins with its AWS CLI layer; it runs only during deploys.',
        },
      );
    }
    Validations.of(this.bucket).acknowledge({
      id: 'AwsSolutions-S1',
      reason:
        'The bucket holds only the console’s public build output, written by deploys; CloudFront is the one reader (OAC), so S3 access logs would record only CloudFront fetching files.',
    });
    Validations.of(this.distribution).acknowledge(
      { id: 'AwsSolutions-CFR1', reason: 'The console is for fleet operators anywhere; no country is excluded by design.' },
      {
        id: 'AwsSolutions-CFR2',
        reason:
          'The distribution serves static files only; the API it calls has its own throttling and authorizers. A WAF web ACL can be attached per account without changing the stack.',
      },
      {
        id: 'AwsSolutions-CFR3',
        reason: 'Static, public build files: access logs would need a logging bucket with ACLs for little insight; the API keeps its own access logs.',
      },
      {
        id: 'AwsSolutions-CFR4',
        reason:
          'The default *.cloudfront.net certificate allows only CloudFront’s default security policy; a custom domain with its own certificate can set TLSv1.2_2021.',
      },
    );
  }
}
